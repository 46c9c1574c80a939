"""Stateful models (``sequence = tp.Sequence(...)``) under the harness: state per correlation
id (numbers and strings), created at START and freed at END or after the idle timeout,
isolated per sequence when the oldest strategy brings several sequences in one ``execute()``,
per-request errors, the declaration's checks and the configuration it needs."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as pb

START, END = 1, 2


class RunningSum(tp.Model):
    inputs = {"VALUE": tp.Tensor("INT32", [1])}
    outputs = {"SUM": tp.Tensor("INT32", [1])}
    max_batch_size = 8
    sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60)

    def setup(self) -> None:
        self.calls: List[int] = []  # rows of each infer() call
        self.ended: List[Tuple[Any, bool, int]] = []  # (id, evicted, sum) of ended sequences

    def start_sequence(self, sequence: tp.SequenceInfo) -> Any:
        return {"sum": 0}

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
        self.calls.append(len(VALUE))
        if int(VALUE.sum()) < 0:
            raise ValueError(f"negative value {int(VALUE.sum())}")
        sequence.state["sum"] += int(VALUE.sum())
        return {"SUM": np.array([[sequence.state["sum"]]], np.int32)}

    def end_sequence(self, sequence: tp.SequenceInfo) -> None:
        self.ended.append((sequence.id, sequence.evicted, sequence.state["sum"]))


class DirectSum(RunningSum):
    max_batch_size = 0
    sequence = tp.Sequence(strategy="direct", idle_timeout_s=5)

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
        sequence.state["sum"] += int(VALUE.sum())
        return {"SUM": np.array([sequence.state["sum"]], np.int32)}


def served(cls: type = RunningSum) -> ModelHarness:
    """A harness on ``cls`` with the configuration ``tritonpy config`` writes for it."""
    return ModelHarness(cls, config=cls.declared_config())  # type: ignore[attr-defined]


def value(v: int) -> Dict[str, np.ndarray]:
    return {"VALUE": np.array([[v]], np.int32)}


def sums(harness: ModelHarness, steps: List[Tuple[int, Any, int]]) -> List[int]:
    """The SUM of each (value, correlation id, flags) request, sent one by one."""
    batched = int(harness.config["max_batch_size"]) > 0
    found = []
    for v, corrid, flags in steps:
        inputs = value(v) if batched else {"VALUE": np.array([v], np.int32)}
        outputs = harness.infer(inputs, correlation_id=corrid, flags=flags)
        found.append(int(outputs["SUM"].reshape(-1)[0]))
    return found


def request(v: int, correlation_id: Any, flags: int, batched: bool = True) -> Any:
    """A pb_utils request as the sequence batcher hands it to execute()."""
    array = np.array([[v]] if batched else [v], np.int32)
    return pb.InferenceRequest(
        correlation_id=correlation_id, flags=flags, inputs=[pb.Tensor("VALUE", array)]
    )


def test_interleaved_sequences_keep_their_own_sums() -> None:
    steps = [(1, 5, START), (10, 6, START), (2, 5, 0), (20, 6, 0), (3, 5, END), (30, 6, END)]
    with served() as harness:
        assert sums(harness, steps) == [1, 10, 3, 30, 6, 60]
        assert harness.model.ended == [(5, False, 6), (6, False, 60)]
        assert len(engine_of(harness.model).sequences) == 0


def test_string_correlation_ids() -> None:
    steps = [(1, "a", START), (10, "b", START), (2, "a", 0), (20, "b", END), (3, "a", END)]
    with served() as harness:
        assert sums(harness, steps) == [1, 10, 3, 30, 6]
        assert harness.model.ended == [("b", False, 30), ("a", False, 6)]


def test_a_one_request_sequence_carries_start_and_end() -> None:
    with served(DirectSum) as harness:
        assert sums(harness, [(7, 9, START | END), (8, 9, START | END)]) == [7, 8]
        assert harness.model.ended == [(9, False, 7), (9, False, 8)]
        assert len(engine_of(harness.model).sequences) == 0


def test_oldest_sequences_in_one_execute_are_computed_each_on_its_own() -> None:
    with served() as harness:
        first = harness.infer_requests(
            [value(1), value(10), value(100)], correlation_ids=[7, 8, 9], flags=[START] * 3
        )
        second = harness.infer_requests(
            [value(2), value(20), value(200)], correlation_ids=[7, 8, 9], flags=[0, END, 0]
        )
        assert [r["SUM"].tolist() for r in first] == [[[1]], [[10]], [[100]]]  # type: ignore[index]
        assert [r["SUM"].tolist() for r in second] == [[[3]], [[30]], [[300]]]  # type: ignore[index]
        assert harness.model.calls == [1] * 6  # one infer() per request, never merged
        assert harness.execute_calls == 2
        assert sorted(engine_of(harness.model).sequences.open) == [7, 9]


def test_a_failing_request_fails_alone_and_leaves_its_sequence_open() -> None:
    with served() as harness:
        harness.infer_requests([value(1), value(10)], correlation_ids=[7, 8], flags=[START] * 2)
        failed, fine = harness.infer_requests(
            [value(-1), value(5)], correlation_ids=[7, 8], flags=[0, 0]
        )
        assert isinstance(failed, tp.TritonRequestError) and failed.code == "INTERNAL"
        assert "negative value -1" in failed.message
        assert fine["SUM"].tolist() == [[15]]  # type: ignore[index]
        assert sums(harness, [(2, 7, END)]) == [3]  # sequence 7 kept its state


def test_a_request_of_an_unknown_sequence_gets_invalid_arg_alone() -> None:
    with served() as harness:
        harness.infer(value(1), correlation_id=7, flags=START)
        model = harness.model
        responses = model.execute([request(5, 41, 0), request(2, 7, 0)])
        error = responses[0].error()
        assert error is not None and error.code() == pb.TritonError.INVALID_ARG
        assert "sequence 41 is not open" in error.message()
        assert "must carry the START flag" in error.message()
        assert responses[1].error() is None
        assert responses[1].output_tensors()[0].as_numpy().tolist() == [[3]]


def test_null_requests_of_the_direct_strategy_are_not_computed() -> None:
    class Batched(RunningSum):
        sequence = tp.Sequence(strategy="direct", idle_timeout_s=60)

    with served(Batched) as harness:
        first, second = harness.sequence(1), harness.sequence(2)
        first.send(VALUE=[[1]])
        assert second.send(VALUE=[[10]])["SUM"].tolist() == [[10]]  # beside a null request
        assert harness.model.calls == [1, 1]  # the null request never reached infer
        null, real = harness.model.execute([request(0, 0, 0), request(5, 2, 0)])
        assert null.error() is None and null.output_tensors() == []
        assert real.output_tensors()[0].as_numpy().tolist() == [[15]]
        assert harness.model.calls == [1, 1, 1]


def test_idle_sequences_are_evicted_at_the_next_execute() -> None:
    with served() as harness:
        store = engine_of(harness.model).sequences
        assert store.clock is harness.clock  # the harness's clock, which the test moves
        harness.infer(value(1), correlation_id=5, flags=START)
        harness.clock.advance(30.0)
        harness.infer(value(10), correlation_id=6, flags=START)
        harness.clock.advance(30.0)  # 5 idle for its 60 s, 6 for 30
        harness.infer(value(100), correlation_id=7, flags=START)
        assert harness.model.ended == [(5, True, 1)]
        assert sorted(store.open) == [6, 7]
        refused = harness.model.execute([request(2, 5, 0)])[0].error()
        assert refused is not None and "evicted after 60 s without a request" in refused.message()
        # restarted with START, it begins again from a fresh state
        assert sums(harness, [(4, 5, START), (6, 5, END)]) == [4, 10]


def test_the_store_reads_the_clock_it_is_given() -> None:
    now = [0.0]
    with served() as harness:
        store = engine_of(harness.model).sequences
        store.clock = lambda: now[0]
        harness.infer(value(1), correlation_id=5, flags=START)
        now[0] = 59.0
        harness.infer(value(1), correlation_id=6, flags=START)
        assert 5 in store and not harness.model.ended
        now[0] = 60.0
        harness.infer(value(1), correlation_id=7, flags=START)
        assert 5 not in store and harness.model.ended == [(5, True, 1)]


class NotedSum(RunningSum):
    """RunningSum with a text output beside: served by the general sequence path."""

    outputs = {"SUM": tp.Tensor("INT32", [1]), "NOTE": tp.Text()}

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
        return {**super().infer(VALUE, sequence), "NOTE": ["summed"] * len(VALUE)}


@pytest.mark.parametrize("cls", [RunningSum, NotedSum], ids=["plain-path", "general-path"])
def test_the_least_recently_served_sequence_is_evicted_at_its_own_deadline(cls: type) -> None:
    # the store looks for idle sequences only once the least recently served one can be
    # idle (SequenceStore.evict_at); a sequence that started first but was served since
    # is not that one, and a sequence is evicted at the first call at or after its deadline
    timeout = cls.sequence.idle_timeout_s  # type: ignore[attr-defined]
    now = [0.0]
    with served(cls) as harness:
        store = engine_of(harness.model).sequences
        store.clock = lambda: now[0]
        path = engine_of(harness.model).execute.func  # type: ignore[attr-defined]
        assert path.__name__ == (
            "execute_plain_sequences" if cls is RunningSum else "execute_sequences"
        )
        harness.infer(value(1), correlation_id=5, flags=START)  # 5 served at 0
        now[0] = timeout / 4
        harness.infer(value(2), correlation_id=6, flags=START)  # 6 at timeout/4
        now[0] = timeout / 2
        harness.infer(value(3), correlation_id=5)  # 5 again: 6 is now the oldest
        now[0] = timeout  # 5's first deadline has passed; it was served since
        harness.infer(value(4), correlation_id=7, flags=START)
        assert sorted(store.open) == [5, 6, 7] and not harness.model.ended
        now[0] = timeout / 4 + timeout - 0.001
        harness.infer(value(1), correlation_id=7)
        assert 6 in store and not harness.model.ended
        now[0] = timeout / 4 + timeout  # 6's deadline
        harness.infer(value(1), correlation_id=7)
        assert harness.model.ended == [(6, True, 2)] and sorted(store.open) == [5, 7]
        now[0] = timeout / 2 + timeout  # 5's deadline; 7 was served at 1.25 x timeout
        harness.infer(value(1), correlation_id=7, flags=END)
        assert harness.model.ended == [(6, True, 2), (5, True, 4), (7, False, 7)]
        assert len(store) == 0
        # an empty store: the next START is evicted on time too
        harness.infer(value(9), correlation_id=8, flags=START)
        now[0] += timeout
        harness.infer(value(1), correlation_id=9, flags=START)
        assert harness.model.ended[-1] == (8, True, 9) and sorted(store.open) == [9]


def test_a_start_under_an_open_id_ends_the_previous_sequence() -> None:
    with served() as harness:
        assert sums(harness, [(1, 5, START), (2, 5, 0), (7, 5, START), (1, 5, END)]) == [1, 3, 7, 8]
        assert harness.model.ended == [(5, True, 3), (5, False, 8)]


def test_start_sequence_failing_fails_the_start_request_and_opens_nothing() -> None:
    class Picky(RunningSum):
        def start_sequence(self, sequence: tp.SequenceInfo) -> Any:
            if sequence.id == 13:
                raise RuntimeError("13 is unlucky")
            return {"sum": 0}

    with served(Picky) as harness:
        with pytest.raises(tp.TritonRequestError, match="13 is unlucky") as caught:
            harness.infer(value(1), correlation_id=13, flags=START)
        assert caught.value.code == "INTERNAL"
        assert 13 not in engine_of(harness.model).sequences


def test_infer_without_the_sequence_argument_and_default_hooks() -> None:
    class Echo(tp.Model):
        inputs = {"VALUE": tp.Tensor("INT32", [1])}
        outputs = {"SUM": tp.Tensor("INT32", [1])}
        sequence = tp.Sequence()

        def infer(self, VALUE: np.ndarray) -> Dict[str, Any]:
            return {"SUM": VALUE}

    with served(Echo) as harness:
        out = harness.infer({"VALUE": np.array([4], np.int32)}, correlation_id=3, flags=START)
        assert out["SUM"].tolist() == [4]
        assert engine_of(harness.model).sequences.open[3].state is None


def test_sequence_info_shows_the_request_flags() -> None:
    seen: List[Tuple[Any, bool, bool]] = []

    class Flags(DirectSum):
        def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
            seen.append((sequence.id, sequence.start, sequence.end))
            return {"SUM": VALUE}

    with served(Flags) as harness:
        for flags in (START, 0, END, START | END):
            harness.infer({"VALUE": np.array([1], np.int32)}, correlation_id="s", flags=flags)
    assert seen == [("s", True, False), ("s", False, False), ("s", False, True), ("s", True, True)]


# -- the declaration and the configuration ------------------------------------------------------


def test_declared_config_writes_sequence_batching_and_no_dynamic_batching() -> None:
    declared = RunningSum.declared_config()
    assert declared["sequence_batching"] == {
        "oldest": {},
        "max_sequence_idle_microseconds": 60_000_000,
    }
    assert "dynamic_batching" not in declared
    with ModelHarness(RunningSum, config={"sequence_batching": declared["sequence_batching"]}) as h:
        assert h.config["max_batch_size"] == 8  # auto-completed, and no dynamic batcher set
        assert "dynamic_batching" not in h.config


def test_plain_models_have_no_sequence_store() -> None:
    class Plain(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"Y": X}

    with ModelHarness(Plain) as harness:
        assert engine_of(harness.model).sequences is None
        assert engine_of(harness.model).plain


def test_initialize_refuses_a_configuration_without_sequence_batching() -> None:
    with pytest.raises(tp.DeclarationError, match=r"has no sequence_batching.*tritonpy config"):
        ModelHarness(RunningSum)


@pytest.mark.parametrize(
    ("batching", "field"),
    [
        ({"direct": {}, "max_sequence_idle_microseconds": 60_000_000}, "strategy 'direct'"),
        ({"oldest": {}, "max_sequence_idle_microseconds": "1000000"}, "idle_microseconds 1000000"),
        ({"oldest": {}}, "idle_microseconds 1000000"),  # Triton's 1 s default
        (
            {
                "oldest": {},
                "max_sequence_idle_microseconds": 60_000_000,
                "iterative_sequence": True,
            },
            "iterative_sequence True",
        ),
    ],
)
def test_initialize_refuses_a_configuration_that_disagrees(
    batching: Dict[str, Any], field: str
) -> None:
    with pytest.raises(tp.DeclarationError, match=f"sequence_batching has [a-z_]*{field}"):
        ModelHarness(RunningSum, config={"sequence_batching": batching})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"strategy": "newest"}, "expected 'direct' or 'oldest'"),
        ({"idle_timeout_s": 0}, "expected a number of seconds > 0"),
        ({"max_candidate_sequences": 0}, "expected an integer >= 1"),
        ({"preserve_ordering": True}, "belong to the 'oldest' strategy"),
    ],
)
def test_bad_sequence_declarations(arguments: Dict[str, Any], message: str) -> None:
    with pytest.raises(tp.DeclarationError, match=message):
        tp.Sequence(**arguments)


def test_infer_asking_for_a_sequence_needs_the_declaration() -> None:
    with pytest.raises(tp.DeclarationError, match=r"declares no sequence = tp.Sequence"):

        class Forgot(tp.Model):
            inputs = {"X": tp.Tensor("INT32", [1])}
            outputs = {"Y": tp.Tensor("INT32", [1])}

            def infer(self, X: np.ndarray, sequence: Any) -> Dict[str, Any]:
                return {"Y": X}


def test_an_input_named_sequence_is_refused_on_a_stateful_model() -> None:
    with pytest.raises(tp.DeclarationError, match="input named 'sequence'"):

        class Clash(tp.Model):
            inputs = {"sequence": tp.Tensor("INT32", [1])}
            outputs = {"Y": tp.Tensor("INT32", [1])}
            sequence = tp.Sequence()

            def infer(self, **inputs: Any) -> Dict[str, Any]:
                return {"Y": inputs["sequence"]}


def test_the_sequence_attribute_must_be_a_declaration() -> None:
    with pytest.raises(tp.DeclarationError, match=r"must be tp.Sequence\(...\)"):

        class Wrong(tp.Model):
            sequence = "oldest"  # type: ignore[assignment]


# -- streaming sequences and iterative sequences ----------------------------------------------


class StreamSum(tp.Model):
    """Decoupled: two parts per request, each adding VALUE to the sequence's sum."""

    inputs = {"VALUE": tp.Tensor("INT32", [1])}
    outputs = {"SUM": tp.Tensor("INT32", [1])}
    # max_batch_size 0 gives one sequence slot unless max_candidate_sequences says more (a
    # second sequence then displaces the first on the 24.10 server, measured)
    sequence = tp.Sequence(
        strategy="oldest", idle_timeout_s=10, preserve_ordering=True, max_candidate_sequences=4
    )

    def setup(self) -> None:
        self.ended: List[Any] = []

    def start_sequence(self, sequence: tp.SequenceInfo) -> Any:
        return [0]

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Iterator[Dict[str, Any]]:
        for _ in range(2):
            sequence.state[0] += int(VALUE[0])
            yield {"SUM": np.array([sequence.state[0]], np.int32)}

    def end_sequence(self, sequence: tp.SequenceInfo) -> None:
        self.ended.append((sequence.id, sequence.state[0]))


def sent_values(req: Any) -> List[Any]:
    """What a request's response sender sent: each part's first output as a list, an error
    response as (code name, message), the flags-only FINAL as 'FINAL'."""
    found: List[Any] = []
    for response, flags in req.created_sender().sent:
        if response is None:
            found.append("FINAL" if flags else None)
        elif response.error() is not None:
            found.append((response.error().code_name(), response.error().message()))
        else:
            found.append(response.output_tensors()[0].as_numpy().tolist())
    return found


def test_a_streaming_sequence_model_keeps_its_state_across_streams() -> None:
    assert StreamSum.decoupled is True
    assert StreamSum.declared_config()["sequence_batching"] == {
        "oldest": {"max_candidate_sequences": 4, "preserve_ordering": True},
        "max_sequence_idle_microseconds": 10_000_000,
    }
    with served(StreamSum) as harness:
        parts = harness.infer_stream({"VALUE": np.array([3], np.int32)}, correlation_id=9, flags=3)
        assert [p["SUM"].tolist() for p in parts] == [[3], [6]]
        model = harness.model
        first = [request(1, "a", START, batched=False), request(10, "b", START, batched=False)]
        assert model.execute(first) is None
        assert [sent_values(r) for r in first] == [[[1], [2], "FINAL"], [[10], [20], "FINAL"]]
        last = request(2, "a", END, batched=False)
        model.execute([last])
        assert sent_values(last) == [[4], [6], "FINAL"]
        assert model.ended == [(9, 6), ("a", 6)]
        unknown = request(1, "zz", 0, batched=False)
        model.execute([unknown])
        (error, final) = sent_values(unknown)
        assert error[0] == "INVALID_ARG" and "sequence 'zz' is not open" in error[1]
        assert final == "FINAL"


class Countdown(tp.Model):
    """Triton's qa/python_models/iterative_sequence, declared: IN responses counting down to
    0, one step per execute()."""

    inputs = {"IN": tp.Tensor("INT32", [1])}
    outputs = {"OUT": tp.Tensor("INT32", [1])}
    sequence = tp.Sequence(iterative=True)

    def setup(self) -> None:
        self.steps: List[Any] = []

    def infer(self, IN: np.ndarray, sequence: tp.SequenceInfo) -> Iterator[Dict[str, Any]]:
        for left in range(int(IN[0]) - 1, -1, -1):
            self.steps.append((sequence.id, left))
            yield {"OUT": np.array([left], np.int32)}


def test_an_iterative_sequence_runs_one_step_per_execute() -> None:
    assert Countdown.declared_config()["sequence_batching"]["iterative_sequence"] is True
    with served(Countdown) as harness:
        parts = harness.infer_stream({"IN": np.array([3], np.int32)})
        assert [p["OUT"].tolist() for p in parts] == [[2], [1], [0]]
        assert harness.execute_calls == 4  # three steps, then the end of the generator
        assert len(engine_of(harness.model).sequences) == 0


def test_iterative_requests_interleave_their_steps() -> None:
    with served(Countdown) as harness:
        model = harness.model
        pending = [
            pb.InferenceRequest(correlation_id=c, flags=START, inputs=[pb.Tensor("IN", n)])
            for c, n in ((1, np.array([2], np.int32)), (2, np.array([3], np.int32)))
        ]
        requests = list(pending)
        rounds = 0
        while pending:
            rounds += 1
            assert model.execute(pending) is None
            again = pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
            pending = [r for r in pending if r.release_flags() == again]
            for r in pending:
                r.set_release_flags(pb.TRITONSERVER_REQUEST_RELEASE_ALL)
        assert model.steps == [(1, 1), (2, 2), (1, 0), (2, 1), (2, 0)]
        assert [sent_values(r) for r in requests] == [
            [[1], [0], "FINAL"],
            [[2], [1], [0], "FINAL"],
        ]
        assert rounds == 4


def test_iterative_needs_a_generator() -> None:
    with pytest.raises(tp.DeclarationError, match="infer must be a generator"):

        class NotSteps(tp.Model):
            inputs = {"IN": tp.Tensor("INT32", [1])}
            outputs = {"OUT": tp.Tensor("INT32", [1])}
            sequence = tp.Sequence(iterative=True)

            def infer(self, IN: np.ndarray) -> Dict[str, Any]:
                return {"OUT": IN}


def test_async_infer_is_refused_on_a_stateful_model() -> None:
    with pytest.raises(tp.DeclarationError, match="write 'def infer' instead"):

        class Later(tp.Model):
            inputs = {"IN": tp.Tensor("INT32", [1])}
            outputs = {"OUT": tp.Tensor("INT32", [1])}
            sequence = tp.Sequence()

            async def infer(self, IN: np.ndarray) -> Dict[str, Any]:
                return {"OUT": IN}


def test_bad_inputs_and_input_errors_fail_their_request_alone() -> None:
    class Strict(RunningSum):
        def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
            if int(VALUE.sum()) > 100:
                raise tp.InputError("VALUE above 100; send 100 or less")
            return super().infer(VALUE, sequence)

    with served(Strict) as harness:
        harness.infer(value(1), correlation_id=4, flags=START)
        missing = pb.InferenceRequest(correlation_id=4, flags=0, inputs=[])
        too_big, empty, fine = harness.model.execute(
            [request(500, 4, 0), missing, request(2, 4, 0)]
        )
        assert too_big.error().code() == pb.TritonError.INVALID_ARG
        assert "VALUE above 100" in too_big.error().message()
        assert empty.error().code() == pb.TritonError.INVALID_ARG
        assert "input 'VALUE' is required" in empty.error().message()
        assert fine.output_tensors()[0].as_numpy().tolist() == [[3]]


def test_plain_sequence_requests_take_the_direct_path_with_their_sequence() -> None:
    class Recorded(RunningSum):
        def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
            self.seen.append((sequence.id, sequence.start, sequence.end))
            return super().infer(VALUE, sequence)

    with served(Recorded) as harness:
        model = harness.model
        model.seen = []
        engine = engine_of(model)
        assert engine.direct_inputs is not None  # plain tensors in and out
        general = []
        compute = engine.compute_in_sequence
        engine.compute_in_sequence = lambda *a: general.append(a[0]) or compute(*a)
        assert sums(harness, [(1, 3, START), (2, 3, 0), (4, 3, END)]) == [1, 3, 7]
        assert model.seen == [(3, True, False), (3, False, False), (3, False, True)]
        assert general == []  # the direct path served every request
        assert model.ended == [(3, False, 7)]


def test_unusual_sequence_requests_go_to_the_general_path_with_their_sequence() -> None:
    class Listed(RunningSum):
        def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
            result = super().infer(VALUE, sequence)
            return {"SUM": result["SUM"].tolist()}  # a list: converted by the general path

    with served(Listed) as harness:
        engine = engine_of(harness.model)
        general = []
        compute = engine.compute_in_sequence
        engine.compute_in_sequence = lambda *a: general.append(a[0]) or compute(*a)
        harness.infer(value(1), correlation_id=4, flags=START)
        wide = pb.InferenceRequest(
            correlation_id=4, flags=0, inputs=[pb.Tensor("VALUE", np.array([[2]], np.int64))]
        )
        (refused,) = harness.model.execute([wide])  # INT64 for INT32: worded by the general path
        assert refused.error().code() == pb.TritonError.INVALID_ARG
        assert "VALUE" in refused.error().message() and "INT32" in refused.error().message()
        assert general == [0]  # the wrong dtype went to the general path
        assert sums(harness, [(2, 4, 0), (3, 4, END)]) == [3, 6]  # state kept, lists converted
        assert harness.model.ended == [(4, False, 6)]
