"""The ensemble_classifier template: its steps agree with the member models' declarations, and
executing the config's steps through one harness per member classifies held-out digits."""

from pathlib import Path

import numpy as np
import pytest

from tritonpy.templates import render_digits_ensemble
from tritonpy.testing import ModelHarness, parse_config_pbtxt

TEMPLATE = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.torch  # the classifier member runs PyTorch


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    digits = render_digits_ensemble(repo, epochs=150)
    config = parse_config_pbtxt((repo / digits.ensemble / "config.pbtxt").read_text())
    members = {}
    for step in config["ensemble_scheduling"]["step"]:
        members[step["model_name"]] = ModelHarness(repo / step["model_name"])
    yield digits, config, members
    for harness in members.values():
        harness.close()


def dims_agree(a, b):
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b))


def run_ensemble(config, members, inputs):
    """Run the steps as Triton's ensemble scheduler does: each as soon as its inputs exist."""
    tensors = dict(inputs)
    pending = list(config["ensemble_scheduling"]["step"])
    while pending:
        step = next(s for s in pending if set(s["input_map"].values()) <= set(tensors))
        pending.remove(step)
        outputs = members[step["model_name"]].infer(
            {key: tensors[value] for key, value in step["input_map"].items()},
            requested_outputs=list(step["output_map"]),
        )
        tensors.update({value: outputs[key] for key, value in step["output_map"].items()})
    return {output["name"]: tensors[output["name"]] for output in config["output"]}


def test_template_config_names_the_digits_members():
    config = parse_config_pbtxt((TEMPLATE / "config.pbtxt").read_text())
    assert config["platform"] == "ensemble"
    assert [s["model_name"] for s in config["ensemble_scheduling"]["step"]] == [
        "digits_preprocess",
        "digits_classifier",
        "digits_postprocess",
    ]
    assert (TEMPLATE / "1").is_dir()


def test_steps_agree_with_member_declarations(repository):
    _, config, members = repository
    # ensemble tensor -> (data_type, dims) as produced, starting with the ensemble inputs
    produced = {i["name"]: (i["data_type"], i["dims"]) for i in config["input"]}
    for step in config["ensemble_scheduling"]["step"]:
        member = members[step["model_name"]].config
        assert config["max_batch_size"] <= member["max_batch_size"]
        inputs = {i["name"]: i for i in member["input"]}
        outputs = {o["name"]: o for o in member["output"]}
        assert set(step["input_map"]) == set(inputs)
        for key, tensor in step["input_map"].items():
            data_type, dims = produced[tensor]
            assert data_type == inputs[key]["data_type"], (step["model_name"], key)
            assert dims_agree(dims, inputs[key]["dims"]), (step["model_name"], key, dims)
        for key, tensor in step["output_map"].items():
            produced[tensor] = (outputs[key]["data_type"], outputs[key]["dims"])
    for output in config["output"]:
        data_type, dims = produced[output["name"]]
        assert data_type == output["data_type"] and dims_agree(dims, output["dims"])


def test_executing_the_steps_classifies_held_out_digits(repository):
    digits, config, members = repository
    correct = 0
    for start in range(0, len(digits.images), config["max_batch_size"]):
        pngs = digits.images[start : start + config["max_batch_size"]]
        out = run_ensemble(config, members, {"IMAGE": np.array([[p] for p in pngs], dtype=object)})
        assert out["SCORES"].dtype == np.float32 and out["CLASS_IDS"].dtype == np.int64
        assert np.all(out["SCORES"][:, 0] >= out["SCORES"][:, -1])
        truth = digits.labels[start : start + len(pngs)]
        correct += sum(row[0] == str(t).encode() for row, t in zip(out["LABELS"], truth))
        assert (out["CLASS_IDS"][:, 0] == [int(row[0]) for row in out["LABELS"]]).all()
    assert correct / len(digits.images) >= 0.9
