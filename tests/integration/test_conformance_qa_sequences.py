"""Conformance of the harness on Triton's own sequence models (tests/integration/
qa_sequence_models: this repository's renditions of the server's ``qa/python_models`` and of
the cases of ``qa/L0_sequence_batcher`` that apply to Python models; its README says what
each stands for). Each case sends the same requests (inputs, correlation ids, START/END
flags, pauses) to a ModelHarness and to a real tritonserver, over gRPC and HTTP (a decoupled
model over a gRPC stream), and outputs, error codes and messages must be identical.

A pause is real time on the server and ``harness.clock.advance`` under the harness: the idle
timeout ends a sequence in both.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple, Union

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tritonpy import TritonRequestError
from tritonpy.client import SequenceControl, stream_infer
from tritonpy.client import request_error as _request_error
from tritonpy.server import TritonServer
from tritonpy.testing import HarnessError, ModelBugError, ModelHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "qa_sequence_models"
START, END = 1, 2


@dataclass(frozen=True)
class Send:
    """One request: its inputs, correlation id and flags."""

    inputs: Dict[str, np.ndarray]
    id: Union[int, str] = 0
    flags: int = 0


@dataclass(frozen=True)
class Pause:
    """Time passing between two requests (the idle timeout counts it)."""

    seconds: float


Step = Union[Send, Pause]
Answer = Union[Dict[str, Any], Tuple[str, str], List[Any]]


def int32(value: int, batched: bool = True, name: str = "INPUT") -> Dict[str, np.ndarray]:
    return {name: np.array([[value]] if batched else [value], np.int32)}


def nobatch(*steps: Tuple[int, int, int]) -> List[Step]:
    return [Send(int32(v, batched=False), cid, f) for v, cid, f in steps]


def batched(*steps: Tuple[int, Union[int, str], int], name: str = "INPUT") -> List[Step]:
    return [Send(int32(v, name=name), cid, f) for v, cid, f in steps]


ADDSUB = {
    "INPUT0": np.arange(16, dtype=np.float32),
    "INPUT1": np.full(16, 0.5, np.float32),
}

#: correlation ids for each CORRID data type (L0_sequence_corrid_batcher's): small, past 31
#: bits, past 32 bits, and a string
CORRIDS: List[Union[int, str]] = [7, 2**31 + 5, 2**33 + 5, "ab"]

#: (case, model, steps); L0_sequence_batcher's cases by their test names
CASES: List[Tuple[str, str, List[Step]]] = [
    (
        "simple-sequence",
        "qa_nobatch_sequence_int32",
        nobatch((1, 5, START), *[(v, 5, 0) for v in range(2, 9)], (9, 5, END)),
    ),
    ("length1-sequence", "qa_nobatch_sequence_int32", nobatch((42, 99, START | END))),
    ("no-correlation-id", "qa_nobatch_sequence_int32", nobatch((1, 0, START), (9, 0, END))),
    (
        "no-sequence-start",
        "qa_nobatch_sequence_int32",
        nobatch((1, 37469245, 0), (3, 37469245, END)),
    ),
    (
        "no-sequence-start2",
        "qa_nobatch_sequence_int32",
        nobatch((1, 3, START), (2, 3, 0), (3, 3, END), (55, 3, 0)),
    ),
    (
        "no-sequence-end",
        "qa_nobatch_sequence_int32",
        nobatch((1, 4566, START), (2, 4566, 0), (42, 4566, START), (9, 4566, END)),
    ),
    (
        "string-id",
        "qa_nobatch_sequence_int32",
        [
            Send(int32(4, batched=False), "alpha", START),
            Send(int32(5, batched=False), "alpha", END),
        ],
    ),
    ("batched-simple", "qa_sequence_int32", batched((1, 5, START), (2, 5, 0), (9, 5, END))),
    ("batched-length1", "qa_sequence_int32", batched((42, 99, START | END))),
    (
        "batch-size",
        "qa_sequence_int32",
        [Send({"INPUT": np.array([[1], [2]], np.int32)}, 27, START)],
    ),
    (
        "batched-interleaved",
        "qa_sequence_int32",
        batched(
            (1, 1001, START), (11, 1002, START), (3, 1001, END), (12, 1002, 0), (14, 1002, END)
        ),
    ),
    (
        "idle-timeout",
        "seq_slots",
        [
            *batched((1, 5, START), name="VALUE"),
            Pause(1.0),
            *batched((2, 5, 0), (3, 5, START), (4, 5, END), name="VALUE"),
        ],
    ),
    (
        "null-slots",
        "seq_slots",
        batched(
            (1, 11, START),
            (2, 12, START),
            (3, 11, END),
            (4, 12, 0),
            (5, 13, START),
            (6, 12, END),
            (7, 13, END),
            name="VALUE",
        ),
    ),
    (
        "sequence-py",
        "qa_sequence_py",
        batched((1, 7, START), (1, 7, 0), (1, 7, END), name="INPUT0"),
    ),
    ("sequence-py-length1", "qa_sequence_py", batched((1, 8, START | END), name="INPUT0")),
    (
        "sequence-py-restart",
        "qa_sequence_py",
        batched((1, 9, START), (1, 9, START), name="INPUT0"),
    ),
    (
        "sequence-py-decoupled",
        "qa_sequence_py_decoupled",
        batched((1, 7, START), (1, 7, 0), (1, 7, END), (1, 8, START | END), name="INPUT0"),
    ),
    (
        # one case: the model's countdown is armed once per instance, as in the original
        "iterative-sequence",
        "qa_iterative_sequence",
        [
            Send({"IN": np.array([3], np.int32)}),
            Send({"IN": np.array([3], np.int32)}),
            Send({"IN": np.array([2], np.int32)}, 70, START),
            Send({"IN": np.array([2], np.int32)}, 70),
        ],
    ),
    ("request-rescheduling", "qa_rescheduling_addsub", [Send(ADDSUB), Send(ADDSUB)]),
    *[
        (
            f"corrid-{kind}",
            f"seq_corrid_{kind}",
            batched(*[(1, cid, START | END) for cid in CORRIDS], name="VALUE"),
        )
        for kind in ("uint64", "int64", "uint32", "int32")
    ],
    ("wrong-return-type", "qa_wrong_return_type", [Send({"INPUT0": np.ones(4, np.float32)})]),
]
STREAMED = {"qa_sequence_py_decoupled", "qa_iterative_sequence"}
MODEL_NAMES = sorted({model for _, model, _ in CASES})


def _normalized(message: str) -> str:
    """Error messages with the model file's directory left out of their frames (the server
    runs a copy of the repository)."""
    return re.sub(r"\S*/(\d+/model\.py\()", r"\1", message)


def _outputs(outputs: Dict[str, np.ndarray]) -> Dict[str, Any]:
    found: Dict[str, Any] = {}
    for name, array in sorted(outputs.items()):
        if array.dtype == np.object_:
            found[name] = [json.loads(v) for v in array.reshape(-1)]
        else:
            found[name] = array.tolist()
    return found


def _error(exc: TritonRequestError, streamed: bool) -> Tuple[str, str]:
    # inside a stream 24.10 sends only an error's message (tritonpy.client: UNKNOWN_CODE)
    return ("STREAM" if streamed else exc.code, _normalized(exc.message))


def via_harness(harness: ModelHarness, steps: List[Step]) -> List[Answer]:
    answers: List[Answer] = []
    for step in steps:
        if isinstance(step, Pause):
            harness.clock.advance(step.seconds)
            continue
        try:
            if harness.decoupled:
                parts = harness.infer_stream(
                    step.inputs, correlation_id=step.id, flags=step.flags, errors="return"
                )
                answers.append(
                    [
                        _error(p, True) if isinstance(p, TritonRequestError) else _outputs(p)
                        for p in parts
                    ]
                )
            else:
                answers.append(
                    _outputs(harness.infer(step.inputs, correlation_id=step.id, flags=step.flags))
                )
        except TritonRequestError as exc:
            # a stream's refusal or failed execute(): raised here, the stream's error there
            error = _error(exc, harness.decoupled)
            answers.append([error] if harness.decoupled else error)
        except ModelBugError as exc:
            answers.append(("MODEL_BUG", str(exc)))
    return answers


def _server_call(client: Any, module: Any, model: str, step: Send) -> Answer:
    tensors = []
    for name, array in step.inputs.items():
        datatype = "FP32" if array.dtype == np.float32 else "INT32"
        tensor = module.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    keywords: Dict[str, Any] = {}
    if step.id not in (0, ""):
        keywords = {
            "sequence_id": step.id,
            "sequence_start": bool(step.flags & START),
            "sequence_end": bool(step.flags & END),
        }
    try:
        result = client.infer(model, tensors, **keywords)
    except InferenceServerException as exc:
        return _error(_request_error(exc), False)
    names = [o["name"] for o in _config(client, module, model)["output"]]
    return _outputs({n: result.as_numpy(n) for n in names})


def _config(client: Any, module: Any, model: str) -> Dict[str, Any]:
    if module is grpcclient:
        return dict(client.get_model_config(model, as_json=True)["config"])
    return dict(client.get_model_config(model))


def _server_stream(server: TritonServer, model: str, step: Send) -> Answer:
    sequence = None
    if step.id not in (0, ""):
        sequence = SequenceControl(step.id, bool(step.flags & START), bool(step.flags & END))
    result = stream_infer(server.grpc_url, model, step.inputs, protocol="grpc", sequence=sequence)
    parts: List[Any] = [_outputs(r) for r in result.responses]
    if result.error is not None:
        parts.append(_error(result.error, True))
    return parts


def via_server(server: TritonServer, protocol: str, model: str, steps: List[Step]) -> List[Answer]:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    port = server.grpc_port if protocol == "grpc" else server.http_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    answers: List[Answer] = []
    try:
        for step in steps:
            if isinstance(step, Pause):
                time.sleep(step.seconds)
            elif model in STREAMED:
                answers.append(_server_stream(server, model, step))
            else:
                answers.append(_server_call(client, module, model, step))
    finally:
        client.close()
    return answers


def _agrees(harness: Answer, server: Answer) -> bool:
    """Equal, or the server's error with tritonpy's explanation added in parentheses (a
    ModelBugError the harness raised, where the server answers, is a disagreement)."""
    if isinstance(harness, tuple) and isinstance(server, tuple) and harness[0] == server[0]:
        return harness[1] == server[1] or harness[1].startswith(server[1] + " (")
    return harness == server


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("qa_sequences") / "repo"
    return triton_server_factory(repository_builder(repo, *MODEL_NAMES, source=MODELS))


def _protocols(model: str) -> List[str]:
    return ["grpc"] if model in STREAMED else ["grpc", "http"]


def _moved(steps: List[Step], protocol: str) -> List[Step]:
    """The steps with correlation ids of their own per protocol: a case run over gRPC and
    then HTTP must not meet the sequences the first run left open on the server."""
    if protocol == "grpc":
        return steps
    moved: List[Step] = []
    for step in steps:
        if isinstance(step, Send) and step.id not in (0, ""):
            new_id = f"{step.id}-http" if isinstance(step.id, str) else step.id + 1_000_000
            step = Send(step.inputs, new_id, step.flags)
        moved.append(step)
    return moved


@pytest.mark.parametrize(("case", "model", "steps"), CASES, ids=[c[0] for c in CASES])
def test_harness_answers_as_the_server(
    server: TritonServer, case: str, model: str, steps: List[Step]
) -> None:
    for protocol in _protocols(model):
        sent = _moved(steps, protocol)
        expected = via_server(server, protocol, model, sent)
        with ModelHarness(MODELS / model) as harness:
            answers = via_harness(harness, sent)
        assert len(answers) == len(expected)
        for got, want in zip(answers, expected):
            assert _agrees(got, want), (protocol, got, want)


def _case(name: str) -> Tuple[str, List[Step]]:
    (found,) = [(model, steps) for case, model, steps in CASES if case == name]
    return found


def test_the_cases_show_what_they_claim(server: TritonServer) -> None:
    """The server's own answers (run under ids of their own), so that the comparison above
    cannot pass on two empty answers: the accumulator, the refusals, the null requests of
    empty slots, the idle timeout, the countdown and the contract breach."""

    def answers(name: str) -> List[Any]:
        model, steps = _case(name)
        return via_server(server, "grpc", model, _moved(_moved(steps, "http"), "http"))

    assert answers("simple-sequence")[-1] == {"OUTPUT": [45]}
    assert answers("no-sequence-end")[-1] == {"OUTPUT": [51]}
    (refused, _) = answers("no-correlation-id")
    assert refused[0] == "INVALID_ARG" and "non-zero or non-empty correlation ID" in refused[1]
    (batch_size,) = answers("batch-size")
    assert batch_size[0] == "INVALID_ARG" and "must specify batch-size 1" in batch_size[1]
    started, timed_out, *_ = answers("idle-timeout")
    assert isinstance(started, dict)
    assert timed_out[0] == "INVALID_ARG" and "must specify the START flag" in timed_out[1]
    slots = answers("null-slots")
    null = {"START": 0, "END": 0, "READY": 0, "CORRID": 0, "id": 0, "flags": 0, "outputs": []}
    assert slots[1]["BATCH"][0][0] == null and slots[1]["BATCH"][0][1]["VALUE"] == 2
    assert len(slots[4]["BATCH"][0]) == 1  # sequence 13 took the freed slot 0
    # the server's countdown is spent by the case above (armed once per instance): a fresh
    # harness shows it, the case having shown the two agree
    with ModelHarness(MODELS / "qa_iterative_sequence") as harness:
        countdown = via_harness(harness, _case("iterative-sequence")[1])
    assert [p["OUT"] for p in countdown[0]] == [[2], [1], [0]] and countdown[1] == [{"OUT": [-1]}]
    # the control keeps the id's low bytes (ids moved by 2,000,000 here)
    assert answers("corrid-uint32")[2]["CORRID"][0][:2] == ["uint32", (2**33 + 2_000_005) % 2**32]
    assert answers("corrid-int32")[1]["CORRID"][0][:2] == ["int32", 2**31 + 2_000_005 - 2**32]
    (breach,) = answers("wrong-return-type")
    assert "Expected a None object" in breach[1]


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_the_model_sees_the_servers_sequence_batching(server: TritonServer, model: str) -> None:
    """``args["model_config"]``'s sequence_batching, normalized as the server normalizes it."""
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    expected = client.get_model_config(model)["sequence_batching"]
    with ModelHarness(MODELS / model) as harness:
        assert json.loads(harness.args["model_config"])["sequence_batching"] == expected


def test_a_new_sequence_waits_for_a_free_slot(server: TritonServer) -> None:
    """L0_sequence_batcher's backlog: with every slot held (qa_nobatch_sequence_int32 has
    one), the server holds a new sequence until a slot frees; the harness, which cannot wait,
    says so, and sent together with the END that frees the slot, runs it after that END."""
    model = "qa_nobatch_sequence_int32"
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")

    def tensor(v: int) -> Any:
        wire = grpcclient.InferInput("INPUT", [1], "INT32")
        wire.set_data_from_numpy(np.array([v], np.int32))
        return wire

    answered: List[Any] = []
    try:
        client.infer(model, [tensor(1)], sequence_id=501, sequence_start=True)
        client.async_infer(
            model,
            [tensor(10)],
            lambda result, error: answered.append((result, error)),
            sequence_id=502,
            sequence_start=True,
        )
        time.sleep(0.5)
        waited = not answered
        client.infer(model, [tensor(2)], sequence_id=501, sequence_end=True)
        deadline = time.monotonic() + 10
        while not answered and time.monotonic() < deadline:
            time.sleep(0.05)
        client.infer(model, [tensor(5)], sequence_id=502, sequence_end=True)
    finally:
        client.close()
    assert waited and answered and answered[0][1] is None
    with ModelHarness(MODELS / model) as harness:
        harness.infer(int32(1, batched=False), correlation_id=501, flags=START)
        with pytest.raises(HarnessError, match="would wait in the sequence batcher's backlog"):
            harness.infer(int32(10, batched=False), correlation_id=502, flags=START)
        _, started = harness.infer_requests(
            [int32(2, batched=False), int32(10, batched=False)],
            correlation_ids=[501, 502],
            flags=[END, START],
        )
    assert not isinstance(started, TritonRequestError)
    assert started["OUTPUT"].tolist() == answered[0][0].as_numpy("OUTPUT").tolist() == [10]
