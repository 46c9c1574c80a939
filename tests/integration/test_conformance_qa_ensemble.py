"""Conformance of the harness on ensembles (tests/integration/qa_ensemble_models: this
repository's renditions of the server's ``qa/python_models`` ensembles ``ensemble``,
``ensemble_io`` and ``fan_add_sub`` with Python members, plus probes; its README says what
each stands for). Each case sends the same request to a RepositoryHarness of the folder and to
a real tritonserver 24.10, over gRPC and HTTP, and outputs, error codes and messages must be
identical: the server checks an ensemble's request against the ensemble's own config (naming
the ensemble) and prefixes a member's error with ``in ensemble '<name>', ``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from tritonpy import TritonRequestError
from tritonpy.client import request_error as _request_error
from tritonpy.client import stream_infer
from tritonpy.server import TritonServer
from tritonpy.testing._repository import RepositoryHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "qa_ensemble_models"
MODEL_NAMES = sorted(p.name for p in MODELS.iterdir() if (p / "config.pbtxt").is_file())

Answer = Union[Dict[str, Any], Tuple[str, str]]


def f16(value: float) -> np.ndarray:
    return np.full(16, value, np.float32)


def rows(value: float, n: int = 1, width: int = 2) -> np.ndarray:
    return np.full((n, width), value, np.float32)


PAIR = {"INPUT0": np.arange(16, dtype=np.float32), "INPUT1": f16(0.5)}

#: (case, model, inputs, requested outputs or None for all)
CASES: List[Tuple[str, str, Dict[str, np.ndarray], Optional[List[str]]]] = [
    # L0_backend_python/ensemble's test: two add_sub steps give 2 * INPUT0, 2 * INPUT1
    ("ensemble", "ensemble", PAIR, None),
    ("wrong-shape", "ensemble", {"INPUT0": np.zeros(8, np.float32), "INPUT1": f16(0)}, None),
    (
        "batch-dim-on-unbatched",
        "ensemble",
        {"INPUT0": rows(1, 1, 16), "INPUT1": rows(1, 1, 16)},
        None,
    ),
    ("missing-input", "ensemble", {"INPUT0": f16(1)}, None),
    ("extra-input", "ensemble", {"INPUT0": f16(1), "INPUT1": f16(1), "EXTRA": f16(1)}, None),
    ("unknown-input", "ensemble", {"INPUT0": f16(1), "BOGUS": f16(1)}, None),
    ("wrong-dtype", "ensemble", {"INPUT0": np.ones(16, np.int32), "INPUT1": f16(1)}, None),
    ("one-output", "ensemble", PAIR, ["OUTPUT1"]),
    ("unknown-output", "ensemble", PAIR, ["NOPE"]),
    ("internal-tensor-as-output", "ensemble", PAIR, ["output_0"]),
    ("fan-add-sub", "fan_add_sub", PAIR, None),
    (
        # L0_backend_python/io's test_ensemble_io (the default trial, every flag False)
        "ensemble-io",
        "ensemble_io",
        {"INPUT0": np.arange(10, dtype=np.float32), "GPU_OUTPUT": np.zeros(3, bool)},
        None,
    ),
    ("batched", "batched_ensemble", {"IN": rows(1, 3)}, None),
    ("batch-above-max", "batched_ensemble", {"IN": rows(1, 5)}, None),
    ("no-batch-dim", "batched_ensemble", {"IN": np.ones(2, np.float32)}, None),
    ("batched-wrong-shape", "batched_ensemble", {"IN": rows(1, 2, 3)}, None),
    ("empty-batch", "batched_ensemble", {"IN": rows(1, 0)}, None),
    ("member-error-response", "batched_ensemble", {"IN": rows(-1)}, None),
    ("member-invalid-arg", "batched_ensemble", {"IN": rows(9)}, None),
    ("member-raises", "batched_ensemble", {"IN": rows(1000)}, None),
    ("member-omits-output", "batched_ensemble", {"IN": rows(7)}, None),
    ("chain", "chain_ensemble", {"IN": rows(1, 2)}, None),
    ("chain-omitted-tensor", "chain_ensemble", {"IN": rows(7)}, None),
    ("chain-second-step-raises", "chain_ensemble", {"IN": rows(60)}, None),
    ("nested", "outer_ensemble", {"A": rows(1, 2)}, None),
    ("nested-member-error", "outer_ensemble", {"A": rows(-1)}, None),
    ("nested-wrong-shape", "outer_ensemble", {"A": rows(1, 2, 3)}, None),
    ("nested-batch-above-max", "outer_ensemble", {"A": rows(1, 5)}, None),
    *[
        (f"bls-{name}", "bls_to_ensemble", {"X": rows(value)}, None)
        for name, value in (
            ("ok", 1),
            ("member-error", -1),
            ("member-invalid-arg", 9),
            ("omitted-output", 7),
            ("batch-above-max", 3),
            ("unknown-output", 5),
            ("member-raises", 1000),
        )
    ],
]


def _normalized(message: str) -> str:
    """Error messages with the model file's directory left out of their frames (the server
    runs a copy of the repository)."""
    return re.sub(r"\S*/(\d+/model\.py\()", r"\1", message)


def _outputs(outputs: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """Outputs as lists; text with the model file's directory left out (bls_to_ensemble
    answers a member's traceback)."""
    found: Dict[str, Any] = {}
    for name, array in sorted(outputs.items()):
        values = np.asarray(array)
        if values.dtype == np.object_:
            found[name] = [_normalized(v.decode()) for v in values.reshape(-1)]
        else:
            found[name] = values.tolist()
    return found


def via_harness(
    repo: RepositoryHarness, model: str, inputs: Dict[str, np.ndarray], outputs: Optional[List[str]]
) -> Answer:
    try:
        return _outputs(repo.infer(model, inputs, requested_outputs=outputs))
    except TritonRequestError as exc:
        return (exc.code, _normalized(exc.message))


def via_server(
    server: TritonServer,
    protocol: str,
    model: str,
    inputs: Dict[str, np.ndarray],
    outputs: Optional[List[str]],
) -> Answer:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    port = server.grpc_port if protocol == "grpc" else server.http_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    tensors = []
    for name, array in inputs.items():
        tensor = module.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    wanted = None if outputs is None else [module.InferRequestedOutput(n) for n in outputs]
    try:
        result = client.infer(model, tensors, outputs=wanted)
    except InferenceServerException as exc:
        error = _request_error(exc)
        return (error.code, _normalized(error.message))
    finally:
        client.close()
    response = result.get_response()
    if module is grpcclient:
        names = [o.name for o in response.outputs]
    else:
        names = [o["name"] for o in response.get("outputs", [])]
    return _outputs({n: result.as_numpy(n) for n in names})


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("qa_ensembles") / "repo"
    return triton_server_factory(repository_builder(repo, *MODEL_NAMES, source=MODELS))


@pytest.fixture(scope="module")
def answers(server: TritonServer) -> Dict[str, Dict[str, Answer]]:
    """Every case's answers: the server's over gRPC and HTTP, and the harness's."""
    found: Dict[str, Dict[str, Answer]] = {}
    with RepositoryHarness(MODELS) as repo:
        for case, model, inputs, outputs in CASES:
            found[case] = {
                "grpc": via_server(server, "grpc", model, inputs, outputs),
                "http": via_server(server, "http", model, inputs, outputs),
                "harness": via_harness(repo, model, inputs, outputs),
            }
    return found


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_harness_answers_as_the_server(answers: Dict[str, Dict[str, Answer]], case: str) -> None:
    got = answers[case]
    assert got["harness"] == got["grpc"] == got["http"], got


def test_the_cases_show_what_they_claim(answers: Dict[str, Dict[str, Answer]]) -> None:
    """The server's own answers, so that the comparison above cannot pass on two empty or
    two wrong answers."""

    def server(case: str) -> Any:
        return answers[case]["grpc"]

    doubled = server("ensemble")
    assert doubled["OUTPUT0"] == (2 * PAIR["INPUT0"]).tolist()
    assert doubled["OUTPUT1"] == (2 * PAIR["INPUT1"]).tolist()
    refusals = {
        "wrong-shape": "unexpected shape for input 'INPUT0' for model 'ensemble'. Expected [16]",
        "missing-input": "expected 2 inputs but got 1 inputs for model 'ensemble'",
        "extra-input": "expected 2 inputs but got 3 inputs for model 'ensemble'",
        "wrong-dtype": "data-type is 'INT32', but model 'ensemble' expects 'FP32'",
        "batch-above-max": "batch-size must be <= 4 for 'batched_ensemble'",
        "no-batch-dim": "for model 'batched_ensemble'. Expected [-1,2], got [2]",
        "empty-batch": "input byte size mismatch for input 'IN' for model 'batched_ensemble'",
    }
    for case, text in refusals.items():
        code, message = server(case)
        assert code == "INVALID_ARG" and message.startswith("[request id: <id_unknown>] ")
        assert text in message, case
    assert server("unknown-input") == (
        "INVALID_ARG",
        "unexpected inference input 'BOGUS' for model 'ensemble'",
    )
    assert server("unknown-output") == (
        "INVALID_ARG",
        "unexpected inference output 'NOPE' for model 'ensemble'",
    )
    assert list(server("one-output")) == ["OUTPUT1"]
    assert server("member-error-response") == (
        "INTERNAL",
        "in ensemble 'batched_ensemble', X must be non-negative",
    )
    assert server("member-invalid-arg") == (
        "INVALID_ARG",
        "in ensemble 'batched_ensemble', X = 9 is refused",
    )
    code, message = server("member-raises")
    assert code == "INTERNAL" and message.startswith(
        "in ensemble 'batched_ensemble', Failed to process the request(s) for model "
        "'batched_step_0_0', message: TritonModelException: X above 100"
    )
    assert server("member-omits-output") == {}
    code, message = server("chain-omitted-tensor")
    assert code == "INVALID_ARG" and message.startswith(
        "in ensemble 'chain_ensemble', [request id: <id_unknown>] expected 1 inputs but got 0 "
        "inputs for model 'batched_step'"
    )
    assert server("ensemble-io")["OUTPUT0"] == list(range(10))

    assert server("nested-member-error") == (
        "INTERNAL",
        "in ensemble 'outer_ensemble', in ensemble 'batched_ensemble', X must be non-negative",
    )

    def called(case: str) -> Any:
        (text,) = server(case)["MSG"]
        return json.loads(text)

    # through BLS every error is INTERNAL (1); a refusal gets the server's BLS wording
    assert called("bls-ok") == {"OUT": [[2.0, 2.0]]}
    assert called("bls-member-error") == [
        1,
        "in ensemble 'batched_ensemble', X must be non-negative",
    ]
    assert called("bls-member-invalid-arg") == [
        1,
        "in ensemble 'batched_ensemble', X = 9 is refused",
    ]
    assert called("bls-omitted-output") == {}
    assert called("bls-unknown-output") == [
        1,
        "Model batched_ensemble - Error when running inference: unexpected inference output "
        "'NOPE' for model 'batched_ensemble'",
    ]


STREAMED = {"INPUT0": np.arange(6, dtype=np.float32), "GPU_OUTPUT": np.zeros(3, bool)}


def test_a_decoupled_ensemble_streams_as_the_server(server: TritonServer) -> None:
    """L0_backend_python/io's decoupled trial: three members answering twice each give the
    client 2 * 2 * 2 responses; a request the ensemble's config refuses ends the stream with
    the same message (inside a stream 24.10 sends only an error's message); a non-streaming
    request is refused as for any decoupled model."""
    model = "ensemble_io_decoupled"
    streamed = stream_infer(server.grpc_url, model, STREAMED, protocol="grpc")
    assert streamed.error is None and len(streamed.responses) == 8
    wrong = {**STREAMED, "INPUT0": np.zeros((2, 3), np.float32)}
    refused = stream_infer(server.grpc_url, model, wrong, protocol="grpc")
    assert not refused.responses and refused.error is not None
    with RepositoryHarness(MODELS) as repo:
        parts = repo.infer_stream(model, STREAMED)
        with pytest.raises(TritonRequestError) as raised:
            repo.infer_stream(model, wrong)
        not_streamed = via_harness(repo, model, STREAMED, None)
    assert [_outputs(p) for p in parts] == [_outputs(r) for r in streamed.responses]
    assert raised.value.code == "INVALID_ARG" and raised.value.message == refused.error.message
    assert "for model 'ensemble_io_decoupled'. Expected [-1], got [2,3]" in raised.value.message
    assert not_streamed == via_server(server, "http", model, STREAMED, None)
    assert isinstance(not_streamed, tuple) and not_streamed[0] == "UNSUPPORTED"


def test_a_step_gets_the_ensemble_requests_id_and_parameters(server: TritonServer) -> None:
    """The ensemble scheduler gives each step's request the ensemble request's id and
    parameters (core r24.10 ensemble_scheduler.cc, SetId and SetParameters); the refusal
    names the id."""
    parameters = {"p": 1, "s": "x"}
    sent = {"IN": np.ones(2, np.float32)}
    wrong = {"IN": np.ones(3, np.float32)}
    answers: Dict[str, Any] = {}
    for module, port in ((grpcclient, server.grpc_port), (httpclient, server.http_port)):
        client = module.InferenceServerClient(f"127.0.0.1:{port}")
        for name, inputs in (("sent", sent), ("wrong", wrong)):
            tensor = module.InferInput("IN", list(inputs["IN"].shape), "FP32")
            tensor.set_data_from_numpy(inputs["IN"])
            try:
                result = client.infer(
                    "echo_ensemble", [tensor], request_id="abc", parameters=parameters
                )
                answers[f"{module.__name__}-{name}"] = json.loads(result.as_numpy("OUT")[0])
            except InferenceServerException as exc:
                answers[f"{module.__name__}-{name}"] = exc.message()
        client.close()
    with RepositoryHarness(MODELS) as repo:
        harness = repo.harness("echo_ensemble")
        (text,) = harness.infer(sent, parameters=parameters, request_id="abc")["OUT"]
        with pytest.raises(TritonRequestError) as raised:
            harness.infer(wrong, request_id="abc")
    for protocol in ("tritonclient.grpc", "tritonclient.http"):
        assert answers[f"{protocol}-sent"] == json.loads(text)
        assert answers[f"{protocol}-wrong"] == raised.value.message
    assert json.loads(text)["id"] == "abc" and json.loads(text)["parameters"] == parameters
    assert raised.value.message.startswith("[request id: abc] unexpected shape for input 'IN'")
