"""A model may use any name, the private names of tritonpy's own past included: the engine
behind ``tp.Model`` keeps its state out of the user's class (issue 30).

``TODAYS_PRIVATE_NAMES`` is the snapshot of every private name ``tp.Model`` had before the
engine took them over (attributes and methods of the model and its mixins). Each model below
defines all of them, as class attributes and again on the instance in ``setup()``, with values
that would have broken tritonpy (``self._decode = json.loads`` made requests fail with a
misleading TypeError); batched, unbatched, merged (with a poison request), streaming, async
and calling models must still answer as the same models without them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Dict, Iterator, List

import numpy as np

import tritonpy as tp
from tritonpy.testing import ModelHarness

TODAYS_PRIVATE_NAMES = (
    "_builtin",
    "_call_dtypes",
    "_call_encode",
    "_call_learned",
    "_call_relearn",
    "_call_result",
    "_call_sender",
    "_cancellation_checked",
    "_cancelled",
    "_cancelled_response",
    "_check_cancellation",
    "_check_not_needed",
    "_check_result",
    "_checks_cancelled",
    "_compute_alone",
    "_decode",
    "_decode_all",
    "_decode_present",
    "_decode_rows",
    "_direct_arrays",
    "_direct_inputs",
    "_direct_outputs",
    "_direct_plan",
    "_encode",
    "_end_cancelled",
    "_end_with",
    "_end_with_error",
    "_error_codes",
    "_error_response",
    "_execute_merged",
    "_execute_special",
    "_finish_one",
    "_infer_kind",
    "_infer_seconds",
    "_input_entries",
    "_input_plan",
    "_internal_error",
    "_isolate",
    "_key_inputs",
    "_log_isolation",
    "_may_request_fewer",
    "_merge",
    "_merge_direct",
    "_merge_directly",
    "_merged_alone",
    "_merged_values",
    "_merges_directly",
    "_one_values",
    "_output_entries",
    "_output_names",
    "_output_plan",
    "_pb",
    "_plain",
    "_record_seconds",
    "_records_from",
    "_refused",
    "_requested_of",
    "_reshapes_alone",
    "_respond",
    "_run_group",
    "_run_groups",
    "_run_one",
    "_send",
    "_serve_alone",
    "_serve_direct",
    "_sliced",
    "_split",
    "_split_group",
    "_stream_head",
    "_timed_infer",
    "_wants_parameters",
)


def _user_value(name: str) -> Any:
    """What a user's attribute of that name might hold: here a function (``_decode``
    replaced by ``json.loads``), a number, or a string, in turn."""
    return (json.loads, 3, "mine")[sum(map(ord, name)) % 3]


def _crowded(name: str, base: type) -> type:
    """``base`` with every private name of today's class defined on it, and again on the
    instance in ``setup()``."""
    namespace: Dict[str, Any] = {n: _user_value(n) for n in TODAYS_PRIVATE_NAMES}

    def setup(self: Any) -> None:
        base.setup(self)
        for n in TODAYS_PRIVATE_NAMES:
            setattr(self, n, _user_value(n))

    namespace["setup"] = setup
    return type(name, (base,), namespace)


class Doubler(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2]), "LABEL": tp.Text()}
    max_batch_size = 8

    def setup(self) -> None:
        self.calls: List[int] = []

    def infer(self, X: np.ndarray) -> Dict[str, Any]:
        self.calls.append(len(X))
        if (X < 0).any():
            raise tp.InputError("X: negative values; send values >= 0")
        return {"Y": X * 2, "LABEL": ["big" if x.sum() > 4 else "small" for x in X]}


class Echo(tp.Model):
    inputs = {"TEXT": tp.Text(), "N": tp.Tensor("INT32", [1], optional=True)}
    outputs = {"UPPER": tp.Text(), "NEXT": tp.Tensor("INT32", [1])}

    def infer(self, TEXT: str, N: Any) -> Dict[str, Any]:
        if TEXT == "CRASH":
            raise ZeroDivisionError("division by zero")
        return {"UPPER": TEXT.upper(), "NEXT": np.array([0 if N is None else N[0] + 1], np.int32)}


class Words(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    def infer(self, TEXT: str) -> Iterator[Dict[str, Any]]:
        for word in TEXT.split():
            if word == "BAD":
                raise tp.InputError("BAD is not a word; send other words")
            yield {"WORD": word}


class AsyncWords(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    async def infer(self, TEXT: str) -> AsyncIterator[Dict[str, Any]]:
        for word in TEXT.split():
            await asyncio.sleep(0)
            yield {"WORD": word}


class Tripler(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}
    max_batch_size = 8

    async def infer(self, X: np.ndarray) -> Dict[str, Any]:
        await asyncio.sleep(0)
        if (X < 0).any():
            raise tp.InputError("X: negative values; send values >= 0")
        return {"Y": X * 3}


def _answers(results: List[Any]) -> List[Any]:
    return [
        (type(r).__name__, getattr(r, "code", None), str(r))
        if isinstance(r, Exception)
        else {name: value.tolist() for name, value in r.items()}
        for r in results
    ]


def test_the_snapshot_holds_every_private_name_once() -> None:
    assert len(TODAYS_PRIVATE_NAMES) == len(set(TODAYS_PRIVATE_NAMES)) == 71
    assert all(n.startswith("_") and not n.startswith("__") for n in TODAYS_PRIVATE_NAMES)


def test_batched_and_merged_calls_with_a_poison_request() -> None:
    requests = [
        {"X": np.ones((1, 2), np.float32)},
        {"X": -np.ones((2, 2), np.float32)},  # the poison: fails alone
        {"X": np.full((2, 2), 3, np.float32)},
    ]
    answers = []
    for model in (Doubler, _crowded("CrowdedDoubler", Doubler)):
        with ModelHarness(model) as harness:
            merged = _answers(harness.infer_requests(requests))
            alone = _answers([harness.infer(requests[0])])
            answers.append((merged, alone, harness.model.calls))
    assert answers[0] == answers[1]
    merged, alone, calls = answers[1]
    assert calls == [5, 1, 2, 2, 1]  # merged, then each request alone, then one alone
    assert merged[0] == {"Y": [[2.0, 2.0]], "LABEL": [[b"small"]]}
    assert merged[1][:2] == ("TritonRequestError", "INVALID_ARG")
    assert merged[2] == {"Y": [[6.0, 6.0], [6.0, 6.0]], "LABEL": [[b"big"], [b"big"]]}


def test_unbatched_calls_with_optional_inputs_and_errors() -> None:
    requests = [
        {"TEXT": np.array([b"abc"], dtype=object)},
        {"TEXT": np.array([b"x"], dtype=object), "N": np.array([4], np.int32)},
        {"TEXT": np.array([b"CRASH"], dtype=object)},
        {"TEXT": np.array([b"\xff"], dtype=object)},  # not UTF-8: refused
    ]
    answers = []
    for model in (Echo, _crowded("CrowdedEcho", Echo)):
        with ModelHarness(model) as harness:
            answers.append(_answers(harness.infer_requests(requests)))
    assert answers[0] == answers[1]
    assert answers[1][0] == {"UPPER": [b"ABC"], "NEXT": [0]}
    assert answers[1][1] == {"UPPER": [b"X"], "NEXT": [5]}
    assert answers[1][2][:2] == ("TritonRequestError", "INTERNAL")
    assert answers[1][3][:2] == ("TritonRequestError", "INVALID_ARG")


def test_streaming_and_async_streaming() -> None:
    for base in (Words, AsyncWords):
        answers = []
        for model in (base, _crowded("Crowded" + base.__name__, base)):
            with ModelHarness(model) as harness:
                parts = harness.infer_stream({"TEXT": "one two"})
                answers.append([part["WORD"].tolist() for part in parts])
        assert answers[0] == answers[1] == [[b"one"], [b"two"]], base


def test_a_stream_that_fails_still_ends_with_its_error() -> None:
    with ModelHarness(_crowded("CrowdedWords", Words)) as harness:
        sent = list(harness.stream_responses({"TEXT": "one BAD"}))
    responses = [response for response, _ in sent if response is not None]
    assert responses[-1].has_error()
    assert "BAD is not a word" in responses[-1].error().message()


def test_async_infer_merged_with_a_poison_request() -> None:
    requests = [
        {"X": np.ones((1, 2), np.float32)},
        {"X": -np.ones((1, 2), np.float32)},
    ]
    answers = []
    for model in (Tripler, _crowded("CrowdedTripler", Tripler)):
        with ModelHarness(model) as harness:
            answers.append(_answers(harness.infer_requests(requests)))
    assert answers[0] == answers[1]
    assert answers[1][0] == {"Y": [[3.0, 3.0]]}
    assert answers[1][1][:2] == ("TritonRequestError", "INVALID_ARG")


class Router(tp.Model):
    """Calls another model twice: once with Python numbers (the data type is learned from
    the server's refusal), once with a numpy array."""

    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}

    def infer(self, X: np.ndarray) -> Dict[str, Any]:
        learned = self.call("doubler", {"X": [[float(v) for v in X]]})["Y"][0]
        again = self.call("doubler", {"X": X.reshape(1, -1)})["Y"][0]
        return {"Y": learned + again}


def test_calls_to_other_models() -> None:
    answers = []
    for model in (Router, _crowded("CrowdedRouter", Router)):
        with ModelHarness(Doubler, name="doubler") as target, ModelHarness(model) as harness:
            harness.register_bls_model("doubler", target)
            answers.append(harness.infer({"X": np.array([1.0, 2.0], np.float32)})["Y"].tolist())
    assert answers[0] == answers[1] == [4.0, 8.0]


class Counted(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}
    max_batch_size = 8
    metrics = {"counted_rows": tp.Counter("rows seen")}
    builtin_metrics = True

    def infer(self, X: np.ndarray) -> Dict[str, Any]:
        self.metrics["counted_rows"].increment(len(X))
        return {"Y": X}


def test_declared_and_builtin_metrics() -> None:
    seen = []
    for model in (Counted, _crowded("CrowdedCounted", Counted)):
        with ModelHarness(model) as harness:
            harness.infer_requests([{"X": np.ones((2, 2), np.float32)}] * 2)
            metrics = harness.model.metrics
            seen.append((metrics["counted_rows"].value, metrics["tritonpy_infer_rows"].count))
    assert seen[0] == seen[1] == (4.0, 1)
