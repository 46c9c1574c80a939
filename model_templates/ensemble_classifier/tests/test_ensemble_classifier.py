"""The ensemble_classifier template: `tritonpy check` finds its steps consistent with the member
models' declarations, and its steps, run over one harness per member, classify held-out digits."""

from pathlib import Path

import numpy as np
import pytest

from tritonpy.check import check_repository
from tritonpy.templates import render_digits_ensemble
from tritonpy.testing import EnsembleHarness, parse_config_pbtxt

TEMPLATE = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.torch  # the classifier member runs PyTorch


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    for module, package in (("torch", "torch"), ("cv2", "image"), ("sklearn", "scikit-learn")):
        pytest.importorskip(module, reason=f"the digits ensemble is trained here: needs {package}")
    return render_digits_ensemble(tmp_path_factory.mktemp("repo"), epochs=150)


def test_template_config_names_the_digits_members():
    config = parse_config_pbtxt((TEMPLATE / "config.pbtxt").read_text())
    assert config["platform"] == "ensemble"
    assert [s["model_name"] for s in config["ensemble_scheduling"]["step"]] == [
        "digits_preprocess",
        "digits_classifier",
        "digits_postprocess",
    ]
    assert (TEMPLATE / "1").is_dir()


def test_steps_agree_with_member_declarations(digits):
    report = check_repository(digits.repository)
    assert report.errors == [] and report.warnings == []
    # against a release: no errors (warnings there are about packing the members' environments)
    assert check_repository(digits.repository, triton_version="24.10").errors == []


def test_executing_the_steps_classifies_held_out_digits(digits):
    correct = 0
    with EnsembleHarness(digits.repository, digits.ensemble) as ensemble:
        batch = ensemble.config["max_batch_size"]
        for start in range(0, len(digits.images), batch):
            pngs = digits.images[start : start + batch]
            out = ensemble.infer({"IMAGE": np.array([[p] for p in pngs], dtype=object)})
            assert out["SCORES"].dtype == np.float32 and out["CLASS_IDS"].dtype == np.int64
            assert np.all(out["SCORES"][:, 0] >= out["SCORES"][:, -1])
            truth = digits.labels[start : start + len(pngs)]
            correct += sum(row[0] == str(t).encode() for row, t in zip(out["LABELS"], truth))
            assert (out["CLASS_IDS"][:, 0] == [int(row[0]) for row in out["LABELS"]]).all()
    assert correct / len(digits.images) >= 0.9


def test_a_bad_image_fails_its_request_in_the_first_step(digits):
    good = np.array([[digits.images[0]]], dtype=object)
    bad = np.array([[b"not a png"]], dtype=object)
    with EnsembleHarness(digits.repository, digits.ensemble) as ensemble:
        first, second = ensemble.infer_requests([{"IMAGE": bad}, {"IMAGE": good}])
    assert first.code == "INVALID_ARG" and "input 'IMAGE', row 0" in first.message
    assert second["LABELS"][0, 0] == str(digits.labels[0]).encode()
