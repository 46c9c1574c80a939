"""ModelHarness as Triton's sequence batcher: the idle timeout on the harness's clock, the
direct strategy's slots and null requests, the oldest strategy's candidates, batches of
several sequences, iterative sequences, and driving a sequence from a test (the server's
side of each is measured in tests/integration/test_conformance_qa_sequences.py)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime.errors import TritonRequestError
from tritonpy.testing import HarnessError, ManualClock, ModelHarness, fake_pb_utils

pb = fake_pb_utils
START, END = 1, 2
CONTROLS = [
    {"name": "START", "control": [{"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [0, 1]}]},
    {"name": "END", "control": [{"kind": "CONTROL_SEQUENCE_END", "int32_false_true": [0, 1]}]},
    {"name": "READY", "control": [{"kind": "CONTROL_SEQUENCE_READY", "int32_false_true": [0, 1]}]},
    {
        "name": "CORRID",
        "control": [{"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_UINT64"}],
    },
]


def config(strategy: Dict[str, Any], mbs: int = 4, **batching: Any) -> Dict[str, Any]:
    return {
        "max_batch_size": mbs,
        "input": [{"name": "VALUE", "data_type": "TYPE_INT32", "dims": [1]}],
        "output": [{"name": "BATCH", "data_type": "TYPE_STRING", "dims": [1]}],
        "sequence_batching": {**strategy, "control_input": CONTROLS, **batching},
    }


class Describer:
    """Answers each request with what its execute() held (as tests/integration/
    qa_sequence_models/seq_slots does on the server)."""

    def execute(self, requests: List[Any]) -> List[Any]:
        def seen(r: Any) -> Dict[str, Any]:
            controls = {
                n: pb.get_input_tensor_by_name(r, n).as_numpy().item()
                for n in ("START", "END", "READY", "CORRID")
            }
            return {**controls, "id": r.correlation_id(), "flags": r.flags()}

        text = json.dumps([seen(r) for r in requests]).encode()
        shape = (1, 1) if requests[0].inputs()[0].as_numpy().ndim == 2 else (1,)
        batch = np.full(shape, text, dtype=np.object_)
        return [pb.InferenceResponse([pb.Tensor("BATCH", batch)]) for _ in requests]


def value(v: int, batched: bool = True) -> Dict[str, np.ndarray]:
    return {"VALUE": np.array([[v]] if batched else [v], np.int32)}


def batch_of(outputs: Any) -> List[Dict[str, Any]]:
    assert not isinstance(outputs, TritonRequestError), outputs
    described: List[Dict[str, Any]] = json.loads(outputs["BATCH"].reshape(-1)[0])
    return described


NULL = {"START": 0, "END": 0, "READY": 0, "CORRID": 0, "id": 0, "flags": 0}


def test_an_idle_sequence_is_ended_by_the_timeout_on_the_harness_clock() -> None:
    cfg = config({"direct": {}}, max_sequence_idle_microseconds=500000)
    with ModelHarness(Describer, config=cfg) as h:
        assert isinstance(h.clock, ManualClock)
        h.infer(value(1), correlation_id=5, flags=START)
        h.clock.advance(0.4)
        h.infer(value(2), correlation_id=5)  # 0.4 s idle: still open
        h.clock.advance(0.6)
        with pytest.raises(TritonRequestError) as refused:
            h.infer(value(3), correlation_id=5)
        assert refused.value.code == "INVALID_ARG"
        assert refused.value.message == (
            "inference request for sequence 5 to model 'Describer' must specify the START "
            "flag on the first request of the sequence"
        )
        assert h.sequence_rules is not None and h.sequence_rules.timed_out == [5]
        h.infer(value(4), correlation_id=5, flags=START)  # a new sequence under the same id


def test_the_default_idle_timeout_is_one_second_and_a_clock_can_be_given() -> None:
    clock = ManualClock(start=100.0)
    with ModelHarness(Describer, config=config({"direct": {}}), clock=clock) as h:
        assert h.clock is clock
        h.infer(value(1), correlation_id=5, flags=START)
        clock.advance(0.999)
        h.infer(value(2), correlation_id=5)
        clock.advance(1.5)
        with pytest.raises(TritonRequestError, match="must specify the START flag"):
            h.infer(value(3), correlation_id=5)
    with pytest.raises(HarnessError, match="cannot go back"):
        clock.advance(-1)


def test_an_empty_slot_below_a_busy_one_holds_a_null_request() -> None:
    with ModelHarness(Describer, config=config({"direct": {}})) as h:
        assert batch_of(h.infer(value(1), correlation_id=11, flags=START)) == [
            {**NULL, "START": 1, "READY": 1, "CORRID": 11, "id": 11, "flags": 1}
        ]
        second = batch_of(h.infer(value(2), correlation_id=12, flags=START))
        assert second[0] == NULL and second[1]["id"] == 12  # slot 0 is 11's, idle now
        h.infer(value(3), correlation_id=11, flags=END)
        assert batch_of(h.infer(value(4), correlation_id=12))[0] == NULL
        # a new sequence takes the lowest free slot: 11's
        assert len(batch_of(h.infer(value(5), correlation_id=13, flags=START))) == 1


def test_requests_sent_together_run_in_slot_order() -> None:
    with ModelHarness(Describer, config=config({"direct": {}})) as h:
        h.infer(value(1), correlation_id=1, flags=START)  # slot 0
        h.infer(value(1), correlation_id=2, flags=START)  # slot 1
        both = h.infer_requests([value(2), value(2)], correlation_ids=[2, 1], flags=[0, 0])
        assert [r["id"] for r in batch_of(both[0])] == [1, 2]
        assert h.execute_calls == 3


def test_a_new_sequence_with_every_slot_held_would_wait_in_the_backlog() -> None:
    cfg = config({"direct": {}}, mbs=2)
    with ModelHarness(Describer, config=cfg) as h:
        h.infer(value(1), correlation_id=1, flags=START)
        h.infer(value(1), correlation_id=2, flags=START)
        with pytest.raises(HarnessError) as waiting:
            h.infer(value(1), correlation_id=3, flags=START)
        assert "would wait in the sequence batcher's backlog: all 2 sequence slots" in str(
            waiting.value
        )
        assert "harness.clock.advance(1)" in str(waiting.value)
        # sent together with the END that frees a slot, it runs in the next execute()
        done = h.infer_requests([value(2), value(3)], correlation_ids=[1, 3], flags=[END, START])
        assert [batch_of(r)[-1]["id"] for r in done] == [1, 3]
        assert h.execute_calls == 2 + 2
        h.clock.advance(1.5)  # 2 and 3 time out: their slots are free again
        h.infer(value(1), correlation_id=4, flags=START)


def test_oldest_candidates_and_batches_of_several_sequences() -> None:
    cfg = config({"oldest": {"max_candidate_sequences": 3}}, mbs=2)
    with ModelHarness(Describer, config=cfg) as h:
        sent = h.infer_requests(
            [value(1), value(2), value(3), value(4)],
            correlation_ids=[1, 2, 3, 1],
            flags=[START, START, START, END],
        )
        # two requests an execute(), one of a sequence each; no null request in oldest
        assert [[r["id"] for r in batch_of(s)] for s in sent] == [[1, 2], [1, 2], [3, 1], [3, 1]]
        with pytest.raises(HarnessError, match="all 3 sequence slots"):
            h.infer_requests([value(1)] * 2, correlation_ids=[4, 5], flags=[START, START])


def test_a_request_of_batch_size_two_is_refused() -> None:
    with ModelHarness(Describer, config=config({"direct": {}})) as h:
        with pytest.raises(TritonRequestError) as refused:
            h.infer({"VALUE": np.array([[1], [2]], np.int32)}, correlation_id=1, flags=START)
    assert (refused.value.code, refused.value.message) == (
        "INVALID_ARG",
        "inference request to model 'Describer' must specify batch-size 1 due to "
        "requirements of sequence batcher",
    )


def test_a_sequence_driven_from_a_test() -> None:
    with ModelHarness(Describer, config=config({"direct": {}})) as h:
        with h.sequence(7) as seq:
            assert batch_of(seq.send(value(1)))[0]["flags"] == START
            assert batch_of(seq.send(VALUE=[[2]]))[0]["flags"] == 0
            last = batch_of(seq.end(value(3)))[0]
            assert (last["flags"], last["END"], seq.ended, seq.sent) == (END, 1, True, 3)
            with pytest.raises(HarnessError, match="has ended"):
                seq.send(value(4))
        with h.sequence("one") as single:
            assert batch_of(single.send(value(1), end=True))[0]["flags"] == START | END
        with pytest.raises(HarnessError, match="non-zero number or a non-empty string"):
            h.sequence(0)


def test_sequence_needs_a_sequence_model() -> None:
    plain = {k: v for k, v in config({"direct": {}}).items() if k != "sequence_batching"}
    with ModelHarness(Describer, config=plain) as h, pytest.raises(HarnessError) as failed:
        h.sequence(1)
    assert "has no sequence_batching" in str(failed.value)


class Countdown:
    """Iterative: runs each request ``VALUE`` steps, one an execute(), then answers the
    flags it saw at each step (decoupled: one response a step)."""

    def initialize(self, args: Dict[str, str]) -> None:
        self.seen: Dict[Any, List[int]] = {}

    def execute(self, requests: List[Any]) -> None:
        for r in requests:
            key = r.correlation_id()
            steps = self.seen.setdefault(key, [])
            steps.append(r.flags())
            left = int(pb.get_input_tensor_by_name(r, "VALUE").as_numpy()[0]) - len(steps)
            out = pb.InferenceResponse([pb.Tensor("FLAGS", np.array([r.flags()], np.int32))])
            if left > 0:
                r.set_release_flags(pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                r.get_response_sender().send(out)
            else:
                r.get_response_sender().send(out, flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None


ITERATIVE = {
    "max_batch_size": 0,
    "model_transaction_policy": {"decoupled": True},
    "input": [{"name": "VALUE", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "FLAGS", "data_type": "TYPE_INT32", "dims": [1]}],
    "sequence_batching": {"iterative_sequence": True},
}


def test_a_rescheduled_request_comes_back_without_flags_and_its_release_ends_it() -> None:
    with ModelHarness(Countdown, config=ITERATIVE) as h:
        parts = h.infer_stream({"VALUE": np.array([3], np.int32)})
        assert [p["FLAGS"].tolist() for p in parts] == [[START], [0], [0]]
        parts = h.infer_stream({"VALUE": np.array([2], np.int32)}, correlation_id=9, flags=START)
        assert [p["FLAGS"].tolist() for p in parts] == [[START], [0]]
        # the release of the request that started sequence 9 ended it
        with pytest.raises(TritonRequestError, match=r"sequence 9 .* must specify the START"):
            h.infer_stream({"VALUE": np.array([1], np.int32)}, correlation_id=9)
        with h.sequence(10) as seq:
            assert [p["FLAGS"].tolist() for p in seq.stream(VALUE=np.array([1], np.int32))] == [
                [START]
            ]


class Engine:
    class Store:
        clock: Any = None

    sequences = Store()


class WithEngine(Describer):
    """Stands for a tp.Model: its engine's sequence store reads the harness's clock."""

    _Model__engine = Engine()


def test_a_tritonpy_model_evicts_on_the_harness_clock() -> None:
    with ModelHarness(WithEngine, config=config({"direct": {}})) as h:
        assert WithEngine._Model__engine.sequences.clock is h.clock


class Tally(tp.Model):
    """A tp.Model of the direct strategy with batching: null requests reach its engine."""

    inputs = {"VALUE": tp.Tensor("INT32", [1])}
    outputs = {"SUM": tp.Tensor("INT32", [1])}
    max_batch_size = 4
    sequence = tp.Sequence(strategy="direct", idle_timeout_s=2)

    def setup(self) -> None:
        self.ended: List[Any] = []

    def start_sequence(self, sequence: tp.SequenceInfo) -> Any:
        return 0

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
        sequence.state += int(VALUE.sum())
        return {"SUM": np.array([[sequence.state]], np.int32)}

    def end_sequence(self, sequence: tp.SequenceInfo) -> None:
        self.ended.append((sequence.id, sequence.evicted))


def test_a_tp_model_beside_null_requests_and_evicted_on_the_harness_clock() -> None:
    with ModelHarness(Tally, config=Tally.declared_config()) as h:  # type: ignore[attr-defined]
        first, second = h.sequence(1), h.sequence(2)
        first.send(VALUE=[[1]])
        assert second.send(VALUE=[[10]])["SUM"].tolist() == [[10]]  # beside a null request
        first.end(VALUE=[[2]])
        assert second.send(VALUE=[[5]])["SUM"].tolist() == [[15]]
        h.clock.advance(3.0)  # past idle_timeout_s=2: the batcher ends sequence 2
        with pytest.raises(TritonRequestError, match=r"sequence 2 .* must specify the START"):
            second.send(VALUE=[[1]])
        h.sequence(3).send(VALUE=[[1]])  # the next execute(): the engine evicts 2's state
        assert h.model.ended == [(1, False), (2, True)]
