"""A stream's parts made into responses in the loop that sends them
(``_streaming.Stream.send_parts``) when every output of the model is a plain numpy tensor and
the part is exactly the declared arrays; anything else goes to the engine's general
``respond``. Each case here is served both ways (the general one by clearing the engine's
``part_outputs``) and must get the same parts, or the same error, in the same place."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as pb

PROMPT = np.array([3, 4], np.int64)


def _parts(kind: str, prompt: np.ndarray) -> Iterator[Any]:
    """Three parts: a good one, the case named ``kind``, a good one."""
    token = np.array([int(prompt.sum())], np.int64)
    score = np.full((2,), 0.5, np.float32)
    yield {"TOKEN": token, "SCORE": score}
    odd: Dict[str, Any] = {
        "good": {"TOKEN": token + 1, "SCORE": score},
        "int32 token": {"TOKEN": token.astype(np.int32), "SCORE": score},
        "float64 score": {"TOKEN": token, "SCORE": score.astype(np.float64)},
        "a list": {"TOKEN": [7], "SCORE": score},
        "a scalar shape": {"TOKEN": np.int64(7), "SCORE": score},
        "a longer token": {"TOKEN": np.array([1, 2], np.int64), "SCORE": score},
        "score of rank 2": {"TOKEN": token, "SCORE": score.reshape(1, 2)},
        "a missing score": {"TOKEN": token},
        "an extra output": {"TOKEN": token, "SCORE": score, "NOPE": token},
        "not a dict": [token, score],
        "a response": tp.Response({"TOKEN": token, "SCORE": score}, parameters={"n": 2}),
    }[kind]
    yield odd
    yield {"TOKEN": token + 2, "SCORE": score * 2}


class Tokens(tp.Model):
    inputs = {"PROMPT": tp.Tensor("INT64", [-1])}
    outputs = {"TOKEN": tp.Tensor("INT64", [1]), "SCORE": tp.Tensor("FP32", [-1])}
    kind = "good"

    def infer(self, PROMPT: np.ndarray) -> Iterator[Any]:
        yield from _parts(self.kind, PROMPT)


class BatchedTokens(tp.Model):
    inputs = {"PROMPT": tp.Tensor("INT64", [2])}
    outputs = {"TOKEN": tp.Tensor("INT64", [1])}
    max_batch_size = 4
    rows_of_second = 0  # 0: the request's rows

    def infer(self, PROMPT: np.ndarray) -> Iterator[Any]:
        rows = self.rows_of_second or len(PROMPT)
        yield {"TOKEN": PROMPT[:, :1]}
        yield {"TOKEN": np.zeros((rows, 1), np.int64)}
        yield {"TOKEN": PROMPT[:, 1:]}


def _served(
    model: type, inputs: Dict[str, Any], general: bool, requested: Optional[List[str]] = None
) -> List[Any]:
    """What a client gets: each part's outputs (data type and values), an error's code and
    message; ``general``: with the engine's general respond for every part."""
    with ModelHarness(model) as harness:
        engine = engine_of(harness.model)
        assert engine.part_outputs is not None  # plain outputs: the loop's own way exists
        if general:
            engine.part_outputs = None
        parts = harness.infer_stream(inputs, requested_outputs=requested, errors="return")
    return [
        (p.code, p.message)
        if isinstance(p, tp.TritonRequestError)
        else {name: (value.dtype.str, value.tolist()) for name, value in p.items()}
        for p in parts
    ]


KINDS = [
    "good", "int32 token", "float64 score", "a list", "a scalar shape", "a longer token",
    "score of rank 2", "a missing score", "an extra output", "not a dict", "a response",
]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_every_part_is_answered_as_the_general_path_answers(kind: str) -> None:
    model = type("Case", (Tokens,), {"kind": kind})
    fast = _served(model, {"PROMPT": PROMPT}, general=False)
    assert fast == _served(model, {"PROMPT": PROMPT}, general=True)
    assert fast[0] == {"TOKEN": ("<i8", [7]), "SCORE": ("<f4", [0.5, 0.5])}
    assert len(fast) in (2, 3)  # an error ends the stream after the parts before it


def test_wrong_parts_are_errors_that_name_the_output() -> None:
    answers = _served(type("Case", (Tokens,), {"kind": "a missing score"}), {"PROMPT": PROMPT},
                      general=False)  # fmt: skip
    assert answers[1][0] == "INTERNAL" and "'SCORE'" in answers[1][1]
    answers = _served(type("Case", (Tokens,), {"kind": "an extra output"}), {"PROMPT": PROMPT},
                      general=False)  # fmt: skip
    assert answers[1][0] == "INTERNAL" and "['NOPE'], which are not declared" in answers[1][1]


def test_a_request_for_fewer_outputs_gets_only_those() -> None:
    fast = _served(Tokens, {"PROMPT": PROMPT}, general=False, requested=["SCORE"])
    assert fast == _served(Tokens, {"PROMPT": PROMPT}, general=True, requested=["SCORE"])
    assert [sorted(p) for p in fast] == [["SCORE"]] * 3


@pytest.mark.parametrize("rows_of_second", [0, 2, 5])
def test_a_batched_streams_parts_keep_the_requests_rows(rows_of_second: int) -> None:
    model = type("Case", (BatchedTokens,), {"rows_of_second": rows_of_second})
    prompt = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    fast = _served(model, {"PROMPT": prompt}, general=False)
    assert fast == _served(model, {"PROMPT": prompt}, general=True)
    assert fast[0] == {"TOKEN": ("<i8", [[1], [3], [5]])}
    if rows_of_second:  # not the request's 3 rows
        assert fast[1][0] == "INTERNAL" and "expected 3 rows" in fast[1][1]
    else:
        assert fast[2] == {"TOKEN": ("<i8", [[2], [4], [6]])}


def test_plain_parts_do_not_call_the_general_respond(monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelHarness(Tokens) as harness:
        engine = engine_of(harness.model)
        called: List[Any] = []
        general = engine.respond
        monkeypatch.setattr(engine, "respond", lambda *a: called.append(a) or general(*a))
        assert len(harness.infer_stream({"PROMPT": PROMPT})) == 3
        assert called == []
        # a part the loop does not take (a list to convert) goes the general way
        harness.model.kind = "a list"
        assert len(harness.infer_stream({"PROMPT": PROMPT})) == 3
        assert len(called) == 1


def test_a_text_output_has_no_plain_table() -> None:
    class Words(tp.Model):
        inputs = {"N": tp.Tensor("INT64", [1])}
        outputs = {"WORD": tp.Text(), "COUNT": tp.Tensor("INT64", [1])}

        def infer(self, N: np.ndarray) -> Iterator[Dict[str, Any]]:
            yield {"WORD": "a", "COUNT": N}

    with ModelHarness(Words) as harness:
        assert engine_of(harness.model).part_outputs is None
        (part,) = harness.infer_stream({"N": np.array([1], np.int64)})
    assert part["WORD"].reshape(-1).tolist() == [b"a"]


def test_streams_and_async_models_are_called_straight_on_their_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # bound once at initialize (Engine._bind_execute): no per-call dispatch through the
    # engine's general execute, whose dispatch (an import statement and two frames) cost
    # microseconds a call
    from tritonpy._runtime._engine import engine as engine_module
    from tritonpy._runtime._engine._async import execute_async
    from tritonpy._runtime._engine._streaming import execute_decoupled

    class Doubled(tp.Model):
        inputs = {"X": tp.Tensor("INT64", [1])}
        outputs = {"Y": tp.Tensor("INT64", [1])}

        async def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"Y": X * 2}

    def refused(self: Any, requests: Any) -> Any:
        raise AssertionError("Engine.execute was called")

    monkeypatch.setattr(engine_module.Engine, "execute", refused)
    for model, path in ((Tokens, execute_decoupled), (Doubled, execute_async)):
        with ModelHarness(model) as harness:
            bound = engine_of(harness.model).execute
            assert bound.func is path  # type: ignore[attr-defined]
            if model is Tokens:
                assert len(harness.infer_stream({"PROMPT": PROMPT})) == 3
            else:
                assert harness.infer({"X": np.array([4], np.int64)})["Y"].tolist() == [8]


def _stream_answers(sender: Any) -> List[Any]:
    """What a request's sender got: each response's outputs or error, then the flags."""
    answers: List[Any] = []
    for response, flags in sender.sent:
        if response is None:
            answers.append(("flags", flags))
        elif response.has_error():
            answers.append(("error", int(response.error().code()), response.error().message()))
        else:
            answers.append({t.name(): t.as_numpy().tolist() for t in response.output_tensors()})
    return answers


def _streamed(model: type, tensors: Dict[str, Any], plain_read: bool) -> List[Any]:
    """``tensors`` handed to ``execute()`` as they are (the fake server's input checks
    bypassed, as a caller inside the stub could); ``plain_read``: with the plain read of
    the inputs, else with the codecs' decoding for every request."""
    from functools import partial

    from tritonpy._runtime._engine._streaming import execute_decoupled

    with ModelHarness(model) as harness:
        engine = engine_of(harness.model)
        if not plain_read:
            engine.execute = partial(execute_decoupled, engine, None)  # type: ignore[method-assign]
        # ("PROMPT ": None, the first input's tensor again)
        given = [(name.strip(), tensors[name.strip()]) for name in tensors]
        request = pb.InferenceRequest(
            model_name="m", inputs=[pb.Tensor(name, np.asarray(value)) for name, value in given]
        )
        assert engine.execute([request]) is None
        return _stream_answers(request.get_response_sender())


class Counted(tp.Model):
    inputs = {"PROMPT": tp.Tensor("INT64", [2]), "TIMES": tp.Tensor("INT64", [1])}
    outputs = {"TOKEN": tp.Tensor("INT64", [1])}

    def infer(self, TIMES: np.ndarray, PROMPT: np.ndarray) -> Iterator[Any]:
        for step in range(int(TIMES[0])):
            yield {"TOKEN": PROMPT[:1] + step}


TIMES = np.array([3], np.int64)
REQUESTS: Dict[str, Dict[str, Any]] = {
    "good": {"PROMPT": np.array([5, 6], np.int64), "TIMES": TIMES},
    "inputs in another order": {"TIMES": np.array([1]), "PROMPT": np.array([5, 6])},
    "int32 prompt": {"PROMPT": np.array([5, 6], np.int32), "TIMES": TIMES},
    "longer prompt": {"PROMPT": np.array([5, 6, 7], np.int64), "TIMES": TIMES},
    "prompt of rank 2": {"PROMPT": np.array([[5, 6]], np.int64), "TIMES": TIMES},
    "an input left out": {"PROMPT": np.array([5, 6], np.int64)},
    "an input twice": {"PROMPT": np.array([5, 6]), "PROMPT ": None},
    "an unknown input": {"PROMPT": np.array([5, 6]), "NOPE": TIMES},
    "no input": {},
}
# what the codecs refuse with INVALID_ARG (the others stream, an unknown input ignored)
REFUSED = (
    "int32 prompt",
    "longer prompt",
    "prompt of rank 2",
    "an input left out",
    "an input twice",
    "no input",
)


@pytest.mark.parametrize("case", list(REQUESTS))
def test_the_plain_read_answers_every_request_as_the_codecs_do(case: str) -> None:
    plain = _streamed(Counted, REQUESTS[case], plain_read=True)
    assert plain == _streamed(Counted, REQUESTS[case], plain_read=False)
    assert plain[-1] == ("flags", 1)  # every stream ends with the flags-only FINAL
    if case == "good":
        assert plain[:-1] == [{"TOKEN": [5]}, {"TOKEN": [6]}, {"TOKEN": [7]}]
    if case in REFUSED:
        assert plain[0][:2] == ("error", int(pb.TritonError.INVALID_ARG))


def test_a_plain_stream_request_skips_the_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any) -> Any:
        raise AssertionError("the codecs' decoding was called")

    with ModelHarness(Counted) as harness:
        monkeypatch.setattr(engine_of(harness.model), "decode", refused)
        parts = harness.infer_stream(REQUESTS["good"])
        assert [p["TOKEN"].tolist() for p in parts] == [[5], [6], [7]]


def test_a_failure_preparing_infers_values_ends_the_stream_with_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a text input: no plain read, the codecs' path, whose values are prepared per request)
    class Echoed(tp.Model):
        inputs = {"TEXT": tp.Text()}
        outputs = {"TOKEN": tp.Tensor("INT64", [1])}

        def infer(self, TEXT: str) -> Iterator[Any]:
            yield {"TOKEN": np.array([len(TEXT)], np.int64)}

    def broken(item: Any) -> Any:
        raise RuntimeError("the values could not be prepared")

    with ModelHarness(Echoed) as harness:
        monkeypatch.setattr(engine_of(harness.model), "one_values", broken)
        (answer,) = harness.infer_stream({"TEXT": "abc"}, errors="return")
    assert isinstance(answer, tp.TritonRequestError) and answer.code == "INTERNAL"
    assert "the values could not be prepared" in answer.message


def test_a_plain_read_request_is_decoded_once_for_all_its_converted_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # parts as lists: each goes to the codecs' respond, which needs the request decoded
    class Listed(tp.Model):
        inputs = {"PROMPT": tp.Tensor("INT64", [2]), "TIMES": tp.Tensor("INT64", [1])}
        outputs = {"TOKEN": tp.Tensor("INT64", [1])}

        def infer(self, PROMPT: np.ndarray, TIMES: np.ndarray) -> Iterator[Any]:
            for step in range(int(TIMES[0])):
                yield {"TOKEN": [int(PROMPT[0]) + step]}

    from tritonpy._runtime._engine._streaming import Stream

    built: List[int] = []
    plain_item = Stream.plain_item

    def counted(self: Stream, rows: int) -> Any:
        built.append(rows)
        return plain_item(self, rows)

    monkeypatch.setattr(Stream, "plain_item", counted)
    with ModelHarness(Listed) as harness:
        parts = harness.infer_stream(REQUESTS["good"])
    assert [p["TOKEN"].tolist() for p in parts] == [[5], [6], [7]]
    assert built == [-1], "the request was decoded again for each converted part"
