"""Streaming models (an ``infer`` that yields): decoupled by declaration, one response per
part, errors and cancellation mid-stream, async generators, through the fake pb_utils."""

from __future__ import annotations

import time
from typing import Any, AsyncIterator, Dict, Iterator, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._tooling.pbtxt import new_config
from tritonpy.config._declarations import apply_declarations, declared_message
from tritonpy.testing import ClientCancelledError, ModelHarness


class Words(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text(), "INDEX": tp.Tensor("INT32", [1])}

    def setup(self) -> None:
        self.closed: List[int] = []

    def infer(self, TEXT: str) -> Iterator[Dict[str, Any]]:
        resumed = 0  # parts the stream asked past: the ones it sent
        try:
            for index, word in enumerate(TEXT.split()):
                if word == "BAD":
                    raise tp.InputError(f"word {index} is BAD; send words other than BAD")
                if word == "CRASH":
                    raise ZeroDivisionError("division by zero")
                yield {"WORD": word, "INDEX": np.array([index], np.int32)}
                resumed += 1
        finally:
            self.closed.append(resumed)


TritonPythonModel = Words


def words(parts: List[Dict[str, Any]]) -> List[bytes]:
    return [part["WORD"].reshape(-1)[0] for part in parts]


def test_a_generator_infer_makes_the_class_decoupled() -> None:
    assert Words.decoupled is True
    assert Words.declared_config()["model_transaction_policy"] == {"decoupled": True}
    with ModelHarness(Words) as harness:
        assert harness.decoupled
        assert harness.config["model_transaction_policy"] == {"decoupled": True}


def test_tritonpy_config_writes_the_decoupled_policy() -> None:
    assert declared_message(Words, "words").model_transaction_policy.decoupled
    config = new_config()
    config.name = "words"
    merged = apply_declarations(config, Words, "words")
    assert merged.model_transaction_policy.decoupled


def test_decoupled_false_on_a_generator_is_a_declaration_error() -> None:
    with pytest.raises(tp.DeclarationError, match="decoupled = False"):

        class Refused(tp.Model):
            inputs = {"X": tp.Tensor("INT32", [1])}
            outputs = {"Y": tp.Tensor("INT32", [1])}
            decoupled = False

            def infer(self, X: np.ndarray) -> Iterator[Dict[str, Any]]:
                yield {"Y": X}


def test_a_plain_infer_stays_non_decoupled() -> None:
    class Plain(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"Y": X}

    assert Plain.decoupled is None
    assert "model_transaction_policy" not in Plain.declared_config()


def test_each_yield_is_one_response_in_order() -> None:
    with ModelHarness(Words) as harness:
        parts = harness.infer_stream({"TEXT": "one two three"})
    assert words(parts) == [b"one", b"two", b"three"]
    assert [int(p["INDEX"][0]) for p in parts] == [0, 1, 2]


def test_an_empty_stream_sends_only_the_final_flag() -> None:
    with ModelHarness(Words) as harness:
        assert harness.infer_stream({"TEXT": ""}) == []


def sent_through_the_sender(harness: ModelHarness, inputs: Dict[str, Any]) -> List[Any]:
    """(response, flags) pairs the model sent, error responses included."""
    return list(harness.stream_responses(inputs))


def test_input_error_mid_stream_is_invalid_arg_after_the_parts_sent() -> None:
    final = 1  # TRITONSERVER_RESPONSE_COMPLETE_FINAL
    with ModelHarness(Words) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer_stream({"TEXT": "a b BAD c"})
        assert harness.model.closed == [2]
        sent = sent_through_the_sender(harness, {"TEXT": "a b BAD c"})
    assert (caught.value.code, caught.value.message) == (
        "INVALID_ARG",
        "word 2 is BAD; send words other than BAD",
    )
    # the error is a response of its own, then a flags-only FINAL (an error flagged FINAL
    # never reaches a BLS caller in 24.10)
    assert [flags for _, flags in sent] == [0, 0, 0, final]
    assert [r is not None and r.has_error() for r, _ in sent] == [False, False, True, False]
    assert sent[-1][0] is None


def test_other_exceptions_mid_stream_are_internal() -> None:
    with ModelHarness(Words) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer_stream({"TEXT": "a CRASH"})
    assert caught.value.code == "INTERNAL"
    assert caught.value.message == "ZeroDivisionError while running infer(): division by zero"


def test_a_bad_input_ends_the_stream_before_infer() -> None:
    with ModelHarness(Words) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer_stream({"TEXT": b"\xc3("})
        assert harness.model.closed == []
    assert caught.value.code == "INVALID_ARG"
    assert caught.value.message.startswith("input 'TEXT', element 0: expected UTF-8 text")


def test_a_wrong_part_is_an_internal_error() -> None:
    class Wrong(tp.Model):
        inputs = {"N": tp.Tensor("INT32", [1])}
        outputs = {"I": tp.Tensor("INT32", [1])}

        def infer(self, N: np.ndarray) -> Iterator[Any]:
            yield {"I": N}
            yield {"NOPE": N}

    with ModelHarness(Wrong) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer_stream({"N": np.array([1], np.int32)})
    assert caught.value.code == "INTERNAL"
    assert "['NOPE'], which are not declared outputs" in caught.value.message


class CheckedWords(Words):
    check_cancellation = True


class SlowWords(Words):
    """Words whose parts take 3 ms each: slow enough for "auto" to check every one."""

    def infer(self, TEXT: str) -> Iterator[Dict[str, Any]]:
        for part in super().infer(TEXT):
            time.sleep(0.003)
            yield part


def _count_checks(harness: ModelHarness, monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """Count the response senders' is_cancelled() calls (each one a round trip on a server)."""
    from tritonpy.testing.fake_pb_utils import _requests

    calls: List[int] = []
    original = _requests.ResponseSender.is_cancelled

    def counted(self: Any) -> bool:
        calls.append(1)
        return bool(original(self))

    monkeypatch.setattr(_requests.ResponseSender, "is_cancelled", counted)
    return calls


@pytest.mark.parametrize("model", [CheckedWords, SlowWords])
def test_cancellation_mid_stream_closes_the_generator(model: type) -> None:
    # always checked (True), or "auto" on parts of 2 ms or more: the next part is not sent
    with ModelHarness(model) as harness:
        parts = harness.infer_stream({"TEXT": "a b c d e f"}, cancel_after=2, errors="return")
        assert words(parts[:-1]) == [b"a", b"b"]
        assert isinstance(parts[-1], ClientCancelledError)  # the client's own, then nothing
        # the generator was closed at its third yield (that part was not sent): its finally
        # block ran
        assert harness.model.closed == [2]


def test_auto_seldom_asks_a_fast_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # parts of microseconds: a round trip to the server per part would cost more than the
    # parts (beside each send, which is a round trip too),
    # so "auto" asks once the generator worked 2 ms since the last check, or 0.1 s passed
    with ModelHarness(Words) as harness:
        checks = _count_checks(harness, monkeypatch)
        text = " ".join(f"w{i}" for i in range(200))
        started = time.perf_counter()
        parts = harness.infer_stream({"TEXT": text})
        elapsed = time.perf_counter() - started
        assert len(parts) == 200
        assert len(checks) <= elapsed / 0.002 + 1  # at most one per 2 ms of the generator
        assert len(checks) < len(parts) / 2  # the point (every part: 200 checks)
        # a cancelled fast stream still ends: the client reads two parts and leaves; the model
        # finds out within 0.1 s (here it produced the whole stream first)
        parts = harness.infer_stream({"TEXT": "a b c d"}, cancel_after=2, errors="return")
        assert words(parts[:-1]) == [b"a", b"b"] and isinstance(parts[-1], ClientCancelledError)


def test_auto_asks_a_slow_stream_before_every_part(monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelHarness(SlowWords) as harness:
        checks = _count_checks(harness, monkeypatch)
        assert len(harness.infer_stream({"TEXT": "a b c d"})) == 4
        assert len(checks) == 4


def test_batched_streams_keep_their_row_dimension() -> None:
    class Rows(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [2])}
        outputs = {"Y": tp.Tensor("FP32", [2])}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Iterator[Dict[str, Any]]:
            for scale in (1, 10):
                yield {"Y": X * scale}

    with ModelHarness(Rows) as harness:
        parts = harness.infer_stream({"X": np.ones((3, 2), np.float32)})
    assert [p["Y"].shape for p in parts] == [(3, 2), (3, 2)]
    assert parts[1]["Y"][0].tolist() == [10.0, 10.0]


class AsyncWords(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    async def infer(self, TEXT: str) -> AsyncIterator[Dict[str, Any]]:
        for word in TEXT.split():
            if word == "BAD":
                raise tp.InputError("BAD word")
            yield {"WORD": word}


def test_an_async_generator_streams_the_same_way() -> None:
    assert AsyncWords.decoupled is True
    with ModelHarness(AsyncWords) as harness:
        assert words(harness.infer_stream({"TEXT": "x y"})) == [b"x", b"y"]
        with pytest.raises(ClientCancelledError) as info:
            harness.infer_stream({"TEXT": "a b c"}, cancel_after=1)
        assert words(info.value.parts) == [b"a"]
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer_stream({"TEXT": "x BAD"})
    assert (caught.value.code, caught.value.message) == ("INVALID_ARG", "BAD word")


def test_a_declared_decoupled_plain_infer_sends_one_part() -> None:
    class One(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}
        decoupled = True

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"Y": X + 1}

    with ModelHarness(One) as harness:
        parts = harness.infer_stream({"X": np.array([1], np.int32)})
    assert [p["Y"].tolist() for p in parts] == [[2]]


def test_check_cancellation_false_streams_to_the_end() -> None:
    class Unchecked(Words):
        check_cancellation = False

    with ModelHarness(Unchecked) as harness:
        parts = harness.infer_stream({"TEXT": "a b c d"}, cancel_after=2, errors="return")
        assert words(parts[:-1]) == [b"a", b"b"]  # the client read two, then left
        assert parts[-1].code == "CANCELLED"
        assert harness.model.closed == [4]  # the model never asked, and produced all four
