"""Conformance of the harness on sequence models (tests/integration/kind_models), raw pb_utils
models that read the sequence batcher's control tensors as NVIDIA's examples do: each case
sends the same requests (values, correlation ids, START/END flags) to a ModelHarness and to a
real tritonserver over gRPC and HTTP, and outputs, error codes and messages must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple, Union

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tritonpy import TritonRequestError
from tritonpy.client import request_error as _request_error
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "kind_models"
START, END = 1, 2
#: (value, correlation id, flags) of each request, in the order they are sent
Step = Tuple[int, Union[int, str], int]
Answer = Union[Dict[str, Any], Tuple[str, str]]

CASES: List[Tuple[str, str, List[Step]]] = [
    (
        "interleaved-direct",
        "seq_sum_direct",
        [(1, 5, START), (10, 6, START), (2, 5, 0), (20, 6, 0), (3, 5, END), (30, 6, END)],
    ),
    ("one-request-sequence", "seq_sum_direct", [(7, 9, START | END), (8, 9, START | END)]),
    ("no-correlation-id", "seq_sum_direct", [(1, 0, START)]),
    ("no-start", "seq_sum_direct", [(1, 41, 0)]),
    ("after-end", "seq_sum_direct", [(1, 42, START), (2, 42, END), (3, 42, 0)]),
    (
        "string-ids-oldest",
        "seq_sum_oldest",
        [(1, "a", START), (10, "b", START), (2, "a", 0), (20, "b", END), (3, "a", END)],
    ),
    ("numeric-ids-oldest", "seq_sum_oldest", [(4, 77, START), (5, 77, END)]),
    ("controls-described", "seq_controls", [(1, 12, START), (1, 12, 0), (1, 12, END)]),
    ("string-corrid-control", "seq_string_corrid", [(1, "s1", START | END)]),
    ("string-id-numeric-corrid", "seq_controls", [(1, "s2", START | END)]),
]
MODEL_NAMES = sorted({model for _, model, _ in CASES})


def _shaped(value: int, batched: bool) -> np.ndarray:
    return np.array([[value]] if batched else [value], np.int32)


def _answer(outputs: Dict[str, np.ndarray]) -> Dict[str, Any]:
    found: Dict[str, Any] = {}
    for name, array in sorted(outputs.items()):
        if array.dtype == np.object_:
            found[name] = [json.loads(v) for v in array.reshape(-1)]
        else:
            found[name] = array.tolist()
    return found


def _via_harness(harness: ModelHarness, steps: List[Step]) -> List[Answer]:
    answers: List[Answer] = []
    batched = int(harness.config.get("max_batch_size", 0)) > 0
    for value, corrid, flags in steps:
        try:
            outputs = harness.infer(
                {"VALUE": _shaped(value, batched)}, correlation_id=corrid, flags=flags
            )
        except TritonRequestError as exc:
            answers.append((exc.code, exc.message))
        else:
            answers.append(_answer(outputs))
    return answers


def _via_server(server: TritonServer, protocol: str, model: str, steps: List[Step]) -> List[Answer]:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    port = server.grpc_port if protocol == "grpc" else server.http_port
    config = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    batched = int(config.get_model_config(model).get("max_batch_size", 0)) > 0
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    names = ["SUM", "BATCH"] if model.startswith("seq_sum_oldest") else None
    names = names or (["SUM"] if model.startswith("seq_sum") else ["DESC"])
    answers: List[Answer] = []
    try:
        for value, corrid, flags in steps:
            tensor = module.InferInput("VALUE", list(_shaped(value, batched).shape), "INT32")
            tensor.set_data_from_numpy(_shaped(value, batched))
            try:
                result = client.infer(
                    model,
                    [tensor],
                    sequence_id=corrid,
                    sequence_start=bool(flags & START),
                    sequence_end=bool(flags & END),
                )
            except InferenceServerException as exc:
                error = _request_error(exc)
                answers.append((error.code, error.message))
            else:
                answers.append(_answer({n: result.as_numpy(n) for n in names}))
    finally:
        client.close()
    return answers


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("sequences") / "repo"
    return triton_server_factory(repository_builder(repo, *MODEL_NAMES, source=MODELS))


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize(("case", "model", "steps"), CASES, ids=[c[0] for c in CASES])
def test_harness_answers_as_the_server(
    server: TritonServer, protocol: str, case: str, model: str, steps: List[Step]
) -> None:
    with ModelHarness(MODELS / model) as harness:
        expected = _via_server(server, protocol, model, steps)
        answers = _via_harness(harness, steps)
        assert len(answers) == len(expected)
        for got, want in zip(answers, expected):
            assert _agrees(got, want), (got, want)


def _agrees(harness: Answer, server: Answer) -> bool:
    """Equal, or the server's error with tritonpy's explanation added in parentheses."""
    if isinstance(harness, tuple) and isinstance(server, tuple) and harness[0] == server[0]:
        return harness[1] == server[1] or harness[1].startswith(server[1] + " (")
    return harness == server


def test_the_cases_show_what_they_claim(server: TritonServer) -> None:
    """The server's answers themselves: running sums per sequence, the refusals named, and
    the control tensors of each request (so the comparison above cannot pass on two empty
    answers)."""
    cases = {case: (model, steps) for case, model, steps in CASES}
    sums = _via_server(server, "grpc", *cases["interleaved-direct"])
    assert [a["SUM"] for a in sums if isinstance(a, dict)] == [[[v]] for v in (1, 10, 3, 30, 6, 60)]
    oldest = _via_server(server, "grpc", *cases["string-ids-oldest"])
    assert [a["SUM"] for a in oldest if isinstance(a, dict)] == [[[v]] for v in (1, 10, 3, 30, 6)]
    (refused,) = _via_server(server, "grpc", *cases["no-correlation-id"])
    assert refused == (
        "INVALID_ARG",
        "inference request to model 'seq_sum_direct' must specify a non-zero or non-empty "
        "correlation ID",
    )
    (described, _, last) = _via_server(server, "grpc", *cases["controls-described"])
    assert isinstance(described, dict) and isinstance(last, dict)
    inputs = {name: rest for name, *rest in described["DESC"][0]["inputs"]}
    assert inputs["START"] == ["float32", [1, 1], [[1.0]]]
    assert inputs["END"] == ["bool", [1, 1], [[False]]]
    assert inputs["READY"] == ["int32", [1, 1], [[1]]]
    assert inputs["CORRID"] == ["int64", [1, 1], [[12]]]
    assert {name: rest for name, *rest in last["DESC"][0]["inputs"]}["END"][2] == [[True]]
    (string_corrid,) = _via_server(server, "grpc", *cases["string-corrid-control"])
    assert isinstance(string_corrid, tuple) and "string elements 2" in string_corrid[1]
