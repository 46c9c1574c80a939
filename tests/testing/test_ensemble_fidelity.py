"""EnsembleHarness answers an ensemble's request as tritonserver 24.10 does (issue 33): the
request is checked against the ensemble's own config, naming the ensemble; a member's error
reaches the client with its code and the prefix ``in ensemble '<name>', ``; requested outputs
are the ensemble's; an ensemble with a decoupled member streams. The texts are the server's,
measured with tests/integration/test_conformance_qa_ensemble.py (which runs the same models
on the real server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.testing import EnsembleHarness, HarnessError, ModelLoadError
from tritonpy.testing._repository import RepositoryHarness

MODELS = Path(__file__).parents[1] / "integration" / "qa_ensemble_models"
ID = "[request id: <id_unknown>] "


def f16(value: float) -> Any:
    return np.full(16, value, np.float32)


def refusal(harness: EnsembleHarness, inputs: Dict[str, Any], **kwargs: Any) -> Any:
    with pytest.raises(TritonRequestError) as raised:
        harness.infer(inputs, **kwargs)
    return (raised.value.code, raised.value.message)


@pytest.fixture(scope="module")
def ensemble() -> Any:
    with EnsembleHarness(MODELS, "ensemble") as harness:
        yield harness


@pytest.fixture(scope="module")
def batched() -> Any:
    with EnsembleHarness(MODELS, "batched_ensemble") as harness:
        yield harness


def test_the_qa_ensemble_doubles_its_inputs(ensemble: EnsembleHarness) -> None:
    x, y = np.arange(16, dtype=np.float32), f16(0.5)
    out = ensemble.infer({"INPUT0": x, "INPUT1": y})
    assert out["OUTPUT0"].tolist() == (2 * x).tolist()
    assert out["OUTPUT1"].tolist() == (2 * y).tolist()


def test_refusals_name_the_ensemble_not_a_member(ensemble: EnsembleHarness) -> None:
    assert refusal(ensemble, {"INPUT0": np.zeros(8, np.float32), "INPUT1": f16(0)}) == (
        "INVALID_ARG",
        f"{ID}unexpected shape for input 'INPUT0' for model 'ensemble'. Expected [16], got [8]. ",
    )
    assert refusal(ensemble, {"INPUT0": f16(1)}) == (
        "INVALID_ARG",
        f"{ID}expected 2 inputs but got 1 inputs for model 'ensemble'. Got input(s) "
        f"['INPUT0'], but missing required input(s) ['INPUT1']. Please provide all required "
        f"input(s).",
    )
    assert refusal(ensemble, {"INPUT0": np.ones(16, np.int32), "INPUT1": f16(1)}) == (
        "INVALID_ARG",
        f"{ID}inference input 'INPUT0' data-type is 'INT32', but model 'ensemble' expects 'FP32'",
    )
    # the server's unknown-input refusal carries no request id (core src/model.cc GetInput)
    assert refusal(ensemble, {"INPUT0": f16(1), "BOGUS": f16(1)}) == (
        "INVALID_ARG",
        "unexpected inference input 'BOGUS' for model 'ensemble'",
    )


def test_the_ensembles_max_batch_size_refuses_what_its_member_would_take(
    batched: EnsembleHarness,
) -> None:
    assert batched.infer({"IN": np.ones((4, 2), np.float32)})["OUT"].shape == (4, 2)
    assert refusal(batched, {"IN": np.ones((5, 2), np.float32)}) == (
        "INVALID_ARG",
        f"{ID}inference request batch-size must be <= 4 for 'batched_ensemble'",
    )
    code, message = refusal(batched, {"IN": np.ones(2, np.float32)})
    assert code == "INVALID_ARG"
    assert message.startswith(
        f"{ID}unexpected shape for input 'IN' for model 'batched_ensemble'. Expected [-1,2], "
        f"got [2]. NOTE: Setting a non-zero max_batch_size"
    )


def test_requested_outputs_are_the_ensembles(ensemble: EnsembleHarness) -> None:
    pair = {"INPUT0": f16(1), "INPUT1": f16(2)}
    assert list(ensemble.infer(pair, requested_outputs=["OUTPUT1"])) == ["OUTPUT1"]
    for name in ("NOPE", "output_0"):  # output_0 is a tensor between the steps
        assert refusal(ensemble, pair, requested_outputs=[name]) == (
            "INVALID_ARG",
            f"unexpected inference output '{name}' for model 'ensemble'",
        )


def test_a_members_error_keeps_its_code_behind_the_ensembles_name(
    batched: EnsembleHarness,
) -> None:
    assert refusal(batched, {"IN": -np.ones((1, 2), np.float32)}) == (
        "INTERNAL",
        "in ensemble 'batched_ensemble', X must be non-negative",
    )
    assert refusal(batched, {"IN": np.full((1, 2), 9, np.float32)}) == (
        "INVALID_ARG",
        "in ensemble 'batched_ensemble', X = 9 is refused",
    )
    code, message = refusal(batched, {"IN": np.full((1, 2), 1000, np.float32)})
    assert code == "INTERNAL" and message.startswith(
        "in ensemble 'batched_ensemble', Failed to process the request(s) for model "
        "'batched_step_0_0', message: TritonModelException: X above 100"
    )


def test_an_output_a_member_left_out_is_left_out_and_the_next_step_refuses() -> None:
    with EnsembleHarness(MODELS, "batched_ensemble") as single:
        assert single.infer({"IN": np.full((1, 2), 7, np.float32)}) == {}
    with EnsembleHarness(MODELS, "chain_ensemble") as chain:
        code, message = refusal(chain, {"IN": np.full((1, 2), 7, np.float32)})
        assert chain.infer({"IN": np.ones((1, 2), np.float32)})["OUT"].tolist() == [[4.0, 4.0]]
    assert (code, message) == (
        "INVALID_ARG",
        f"in ensemble 'chain_ensemble', {ID}expected 1 inputs but got 0 inputs for model "
        f"'batched_step'. Got input(s) [], but missing required input(s) ['X']. Please "
        f"provide all required input(s).",
    )


def test_one_refused_request_leaves_the_others_of_the_call(batched: EnsembleHarness) -> None:
    too_big, failed, good = batched.infer_requests(
        [
            {"IN": np.ones((5, 2), np.float32)},
            {"IN": -np.ones((1, 2), np.float32)},
            {"IN": np.ones((2, 2), np.float32)},
        ]
    )
    assert isinstance(too_big, TritonRequestError) and "batch-size must be <= 4" in str(too_big)
    assert isinstance(failed, TritonRequestError) and failed.code == "INTERNAL"
    assert not isinstance(good, TritonRequestError)
    assert good["OUT"].tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_an_ensemble_with_a_decoupled_member_streams_each_response_on() -> None:
    inputs = {"INPUT0": np.arange(3, dtype=np.float32), "GPU_OUTPUT": np.zeros(3, bool)}
    with EnsembleHarness(MODELS, "ensemble_io_decoupled") as streamed:
        assert streamed.decoupled
        parts = streamed.infer_stream(inputs)
        code, message = refusal(streamed, inputs)
        wrong = streamed.infer_stream({**inputs, "GPU_OUTPUT": [[True]]}, errors="return")
    assert len(parts) == 8
    assert all(p["OUTPUT0"].tolist() == [0.0, 1.0, 2.0] for p in parts)
    assert (code, message) == (
        "UNSUPPORTED",
        "HTTP end point doesn't support models with decoupled transaction policy",
    )
    (error,) = wrong
    assert isinstance(error, TritonRequestError) and "'ensemble_io_decoupled'" in error.message


def test_a_bls_call_to_an_ensemble_gets_its_requested_outputs(tmp_path: Path) -> None:
    caller = tmp_path / "caller"
    (caller / "1").mkdir(parents=True)
    (caller / "config.pbtxt").write_text(
        'name: "caller"\nbackend: "python"\n'
        'input [{ name: "X" data_type: TYPE_FP32 dims: [16] }]\n'
        'output [{ name: "Y" data_type: TYPE_FP32 dims: [16] }]\n'
    )
    (caller / "1" / "model.py").write_text(
        "import triton_python_backend_utils as pb_utils\n\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        out = []\n"
        "        for request in requests:\n"
        "            x = pb_utils.get_input_tensor_by_name(request, 'X')\n"
        "            two = pb_utils.Tensor('INPUT1', x.as_numpy())\n"
        "            answer = pb_utils.InferenceRequest(model_name='ensemble',\n"
        "                inputs=[pb_utils.Tensor('INPUT0', x.as_numpy()), two],\n"
        "                requested_output_names=['OUTPUT0']).exec()\n"
        "            names = [t.name() for t in answer.output_tensors()]\n"
        "            assert names == ['OUTPUT0'], names\n"
        "            y = pb_utils.get_output_tensor_by_name(answer, 'OUTPUT0').as_numpy()\n"
        "            out.append(pb_utils.InferenceResponse([pb_utils.Tensor('Y', y)]))\n"
        "        return out\n"
    )
    repository = tmp_path / "repo"
    repository.mkdir()
    for name in ("ensemble", "add_sub_1", "add_sub_2"):
        (repository / name).symlink_to(MODELS / name)
    (repository / "caller").symlink_to(caller)
    with RepositoryHarness(repository) as repo:
        assert repo.infer("caller", {"X": f16(1)})["Y"].tolist() == [2.0] * 16  # 2 * INPUT0


def test_a_step_reading_a_tensor_nothing_provides_is_refused_at_load(tmp_path: Path) -> None:
    (tmp_path / "broken" / "1").mkdir(parents=True)
    config = (MODELS / "ensemble" / "config.pbtxt").read_text()
    (tmp_path / "broken" / "config.pbtxt").write_text(
        config.replace('name: "ensemble"', 'name: "broken"').replace(
            'value: "output_1"', 'value: "nowhere"', 1
        )
    )
    with pytest.raises(HarnessError, match=r"step 'add_sub_2' reads \['output_1'\]"):
        EnsembleHarness(tmp_path, "broken")


def test_a_bls_call_the_ensemble_refuses_reads_as_the_servers_bls_refusal() -> None:
    with RepositoryHarness(MODELS) as repo:
        (too_big,) = repo.infer("bls_to_ensemble", {"X": np.full((1, 2), 3, np.float32)})["MSG"]
        (failed,) = repo.infer("bls_to_ensemble", {"X": np.full((1, 2), -1, np.float32)})["MSG"]
    assert json.loads(too_big) == [
        1,
        f"Model batched_ensemble - Error when running inference: {ID}inference request "
        f"batch-size must be <= 4 for 'batched_ensemble'",
    ]
    assert json.loads(failed) == [1, "in ensemble 'batched_ensemble', X must be non-negative"]


def test_every_step_gets_the_ensemble_requests_id_and_parameters() -> None:
    with RepositoryHarness(MODELS) as repo:
        (text,) = repo.infer(
            "echo_ensemble", {"IN": np.ones(2, np.float32)}, parameters={"p": 1}, request_id="r7"
        )["OUT"]
        with pytest.raises(TritonRequestError) as raised:
            repo.infer("echo_ensemble", {"IN": np.ones(3, np.float32)}, request_id="r7")
        with pytest.raises(TritonRequestError) as unknown:
            repo.infer("echo_ensemble", {"BOGUS": np.ones(2, np.float32)}, request_id="r7")
    seen = json.loads(text)
    assert (seen["id"], seen["parameters"], seen["requested"]) == ("r7", {"p": 1}, ["SEEN"])
    assert raised.value.message.startswith("[request id: r7] unexpected shape for input 'IN'")
    # as in the server (core src/model.cc GetInput), without the request id
    assert unknown.value.message == "unexpected inference input 'BOGUS' for model 'echo_ensemble'"


def test_a_step_that_is_an_ensemble_nests_the_prefix() -> None:
    with EnsembleHarness(MODELS, "outer_ensemble") as outer:
        assert isinstance(outer.members["batched_ensemble"], EnsembleHarness)
        assert outer.infer({"A": np.ones((1, 2), np.float32)})["B"].tolist() == [[2.0, 2.0]]
        assert refusal(outer, {"A": -np.ones((1, 2), np.float32)}) == (
            "INTERNAL",
            "in ensemble 'outer_ensemble', in ensemble 'batched_ensemble', X must be non-negative",
        )


def test_an_ensemble_allowing_more_than_a_member_is_refused_at_load(tmp_path: Path) -> None:
    for name in ("batched_step", "batched_ensemble"):
        (tmp_path / name).symlink_to(MODELS / name)
    (tmp_path / "outer8" / "1").mkdir(parents=True)
    config = (MODELS / "outer_ensemble" / "config.pbtxt").read_text()
    (tmp_path / "outer8" / "config.pbtxt").write_text(
        config.replace('name: "outer_ensemble"', 'name: "outer8"').replace(
            "max_batch_size: 4", "max_batch_size: 8"
        )
    )
    with pytest.raises(ModelLoadError) as refused:
        EnsembleHarness(tmp_path, "outer8")
    # the server's log line (24.10, measured): "Invalid argument: ensemble outer8 allows ..."
    assert refused.value.failures == {
        "outer8": "ensemble outer8 allows maximum batch size 8, but it contains model "
        "batched_ensemble which only allows maximum batch size to be 4"
    }
