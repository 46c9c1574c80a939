"""The direct path (tritonpy/_runtime/_engine/_direct.py) of batched models with ``tp.Text`` /
``tp.Bytes`` inputs and ``tp.Text`` / ``tp.JSON`` outputs: a request alone and the requests of
one call merged answer exactly as the general paths do, whatever the requests hold and
whatever ``infer`` returns; good calls are answered by the direct path alone.

As in test_direct_path.py, requests are built with the fake pb_utils and handed to
``execute()`` directly; an answer is what the client gets (the stub encodes ``str``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Type

import numpy as np
import pytest
from direct_paths import both, without_fallback

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as pb

Returns = Callable[[List[str], List[bytes]], Any]


def _wire(value: Any) -> Any:
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value.encode() if isinstance(value, str) else value


def _answer(response: Any) -> Any:
    if response.has_error():
        error = response.error()
        return ("error", int(error.code()), error.message())
    return {
        t.name(): (t.as_numpy().dtype.str, _wire(t.as_numpy().tolist()))
        for t in response.output_tensors()
    }


def _model(returns: Returns) -> Type[tp.Model]:
    class Words(tp.Model):
        inputs = {"TEXT": tp.Text(), "RAW": tp.Bytes()}
        outputs = {"UPPER": tp.Text(), "STATS": tp.JSON()}
        max_batch_size = 8
        check_cancellation = False

        def infer(self, TEXT: List[str], RAW: List[bytes]) -> Any:
            return returns(TEXT, RAW)

    return Words


def _request(*texts: bytes, raw: Any = None, **others: Any) -> Any:
    column = np.array([[t] for t in texts], dtype=object)
    tensors = [pb.Tensor("TEXT", column), pb.Tensor("RAW", column if raw is None else raw)]
    tensors += [pb.Tensor(name, value) for name, value in others.items()]
    return pb.InferenceRequest(model_name="m", inputs=tensors)


CALLS: Dict[str, List[Any]] = {
    "one": [_request(b"hello world")],
    "two-rows": [_request("ünï code".encode(), b"x")],
    "merged": [_request(b"a b"), _request(b"c", b"d e f"), _request(b"")],
    "invalid-utf8-alone": [_request(b"ok", b"bad \xff")],
    "invalid-utf8-merged": [_request(b"ok"), _request(b"\xc3("), _request(b"fine")],
    "rows-that-disagree": [_request(b"a", b"b", raw=np.array([[b"x"]], dtype=object))],
    "unknown-input": [_request(b"a", OTHER=np.ones((1, 1), np.float32))],
}
GOOD = ["one", "two-rows", "merged"]

RETURNS: Dict[str, Returns] = {
    "lists": lambda t, r: {
        "UPPER": [s.upper() for s in t],
        "STATS": [{"chars": len(s), "raw": len(b)} for s, b in zip(t, r)],
    },
    "bytes-and-arrays": lambda t, r: {
        "UPPER": np.array([[s.upper().encode()] for s in t], dtype=object),
        "STATS": [[len(s)] for s in t],
    },
    "an-int-among-the-text": lambda t, r: {"UPPER": [7] * len(t), "STATS": [{}] * len(t)},
    "a-str-the-stub-cannot-encode": lambda t, r: {
        "UPPER": [s + "\udcff" if s == "d e f" or s == "x" else s for s in t],
        "STATS": [None] * len(t),
    },
    "not-json": lambda t, r: {"UPPER": t, "STATS": [{"set": {1}}] * len(t)},
    "a-row-lost": lambda t, r: {"UPPER": t[1:], "STATS": [1] * len(t)},
    "rows-of-lists": lambda t, r: {"UPPER": [[s] for s in t], "STATS": [[s] for s in t]},
    "numpy-values-in-json": lambda t, r: {
        "UPPER": t,
        "STATS": [{"n": np.float32(0.5), "v": np.arange(2)} for _ in t],
    },
}


@pytest.mark.parametrize("returns", list(RETURNS), ids=list(RETURNS))
def test_string_answers_match_the_general_path(returns: str) -> None:
    model = _model(RETURNS[returns])
    direct, general = both(model, list(CALLS.values()), _answer)
    assert direct == general
    if returns == "lists":
        answered = [isinstance(a, dict) for call in direct for a in call]
        # per call: one; two rows; three merged; invalid UTF-8 alone; merged with one
        # invalid; rows that disagree; an unknown input (which the server refuses before a
        # model sees it; both paths leave it alone)
        assert answered == [True, True, True, True, True, False, True, False, True, False, True]
        assert direct[1][0]["UPPER"] == ("|O", [["ÜNÏ CODE".encode()], [b"X"]])
        assert direct[2][1]["STATS"][1] == [[b'{"chars":1,"raw":1}'], [b'{"chars":5,"raw":5}']]
        assert "row 1: expected UTF-8 text" in direct[3][0][2]
        assert without_fallback(model, [CALLS[name] for name in GOOD], _answer) == direct[:3]
    if returns == "a-str-the-stub-cannot-encode":
        assert direct[1][0][0] == "error" and "element 1" in direct[1][0][2]
        assert direct[2][1][0] == "error" and isinstance(direct[2][0], dict)


def test_unbatched_text_and_subclasses_keep_the_general_path() -> None:
    class Lower(tp.Text):
        def decode_element(self, data: bytes) -> str:
            return data.decode().lower()

    def model(inputs: Dict[str, Any], outputs: Dict[str, Any], batch: int) -> Any:
        def infer(self: tp.Model, X: Any) -> Dict[str, Any]:
            return {"Y": X}

        namespace = {"inputs": inputs, "outputs": outputs, "infer": infer}
        namespace.update(max_batch_size=batch)
        return type("Other", (tp.Model,), namespace)

    for inputs, outputs, batch in [
        ({"X": tp.Text()}, {"Y": tp.Text()}, 0),
        ({"X": Lower()}, {"Y": tp.Text()}, 4),
        ({"X": tp.Text(dims=[-1])}, {"Y": tp.Text(dims=[-1])}, 4),
        ({"X": tp.Text(optional=True)}, {"Y": tp.Text()}, 4),
        ({"X": tp.Text()}, {"Y": tp.JSON(dims=[2])}, 4),
        ({"X": tp.Tensor("FP32", [1])}, {"Y": tp.JSON()}, 0),  # no rows to check a list by
    ]:
        with ModelHarness(model(inputs, outputs, batch)) as harness:
            assert engine_of(harness.model).direct_inputs is None, (inputs, outputs, batch)
    with ModelHarness(model({"X": Lower()}, {"Y": tp.Text()}, 4)) as harness:
        assert harness.infer({"X": np.array([[b"AB"]], dtype=object)})["Y"].tolist() == [[b"ab"]]
    with ModelHarness(model({"X": tp.Bytes()}, {"Y": tp.JSON()}, 4)) as harness:
        assert engine_of(harness.model).direct_inputs is not None
