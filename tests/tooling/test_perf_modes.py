"""perf's modes without a server: the model's kind from its configuration, the sequence
driver's ids and flags, the engine's stream and sequence counts, the report of each mode,
perf_analyzer's options, the refusals' messages and tune's search on a sequence model. The
real-server runs are in tests/integration/test_perf_kinds.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from tritonpy.cli import main
from tritonpy.client import ModelKind, model_kind
from tritonpy.perf._engine import Outcome, run_closed_loop
from tritonpy.perf._inputs import PerfInputError
from tritonpy.perf._perf_analyzer import KindFlags, build_command, parse_csv
from tritonpy.perf._refusals import http_refusal, kind_notes, refused_message
from tritonpy.perf._report import PerfPoint, PerfReport, point_from_window
from tritonpy.perf._runner import perf_analyzer_input_data
from tritonpy.perf._sequences import SequenceCaller, SequenceIds
from tritonpy.perf._tune import (
    Candidate,
    Trial,
    TuneResult,
    apply_candidate,
    candidate_of,
    search_space,
    write_best,
)

SEQUENCE_CONFIG: Dict[str, Any] = {
    "name": "seq",
    "max_batch_size": 8,
    "sequence_batching": {
        # the server's JSON leaves out CONTROL_SEQUENCE_START: the enum's zero value
        "control_input": [
            {"name": "START", "control": [{"int32_false_true": [0, 1]}]},
            {
                "name": "CORRID",
                "control": [{"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_STRING"}],
            },
        ],
        "oldest": {"max_candidate_sequences": 4, "preferred_batch_size": [8]},
    },
}


def test_model_kind_from_the_served_configuration() -> None:
    plain = model_kind({"name": "m"})
    assert (plain.mode, plain.decoupled, plain.sequence) == ("plain", False, False)
    stream = model_kind({"name": "s", "model_transaction_policy": {"decoupled": True}})
    assert stream.mode == "streaming" and stream.phrase() == "a decoupled model"
    sequence = model_kind(SEQUENCE_CONFIG)
    assert sequence.mode == "sequence" and sequence.strategy == "oldest"
    assert sequence.id_type == "TYPE_STRING" and sequence.string_id
    assert sequence.uses_string_ids("auto") and not sequence.uses_string_ids("numeric")
    direct = model_kind({"name": "d", "sequence_batching": {}})  # no strategy: direct
    assert direct.strategy == "direct" and direct.id_type == ""
    assert not direct.uses_string_ids("auto") and direct.uses_string_ids("string")
    assert direct.phrase() == "a sequence model (direct strategy)"
    both = model_kind({**SEQUENCE_CONFIG, "model_transaction_policy": {"decoupled": True}})
    assert both.mode == "sequence" and both.decoupled


def test_an_ensemble_over_a_sequence_model_is_one() -> None:
    configs = {
        "outer": {"name": "outer", "ensemble_scheduling": {"step": [{"model_name": "plain"},
                                                                   {"model_name": "inner"}]}},
        "inner": {"name": "inner", "ensemble_scheduling": {"step": [{"model_name": "seq"}]}},
        "plain": {"name": "plain"},
        "seq": SEQUENCE_CONFIG,
    }  # fmt: skip
    kind = model_kind(configs["outer"], lambda name: configs[name])
    assert kind.sequence and kind.via == "seq" and kind.strategy == "oldest" and kind.string_id
    assert kind.phrase() == "an ensemble over the sequence model 'seq' (oldest strategy)"
    assert not model_kind(configs["outer"]).sequence  # without a lookup: its own config only

    def missing(name: str) -> Dict[str, Any]:
        raise KeyError(name)

    assert not model_kind(configs["outer"], missing).sequence


def test_sequence_ids_are_fresh_bounded_and_checked() -> None:
    ids = SequenceIds(5, 8)
    assert [ids.take() for _ in range(5)] == [5, 6, 7, 5, 6]  # END excluded, then again
    ids.check(3)
    with pytest.raises(PerfInputError, match="holds 3 id"):
        ids.check(4)
    assert [SequenceIds(string=True).take() for _ in range(2)] == ["1", "1"]
    strings = SequenceIds(string=True)
    assert [strings.take(), strings.take()] == ["1", "2"]
    with pytest.raises(PerfInputError, match="START >= 1 and END > START"):
        SequenceIds(4, 4)


class FakeSender:
    """Records the flags of each request; fails the requests whose number is in ``fail``."""

    def __init__(self, fail: Tuple[int, ...] = ()) -> None:
        self.sent: List[Tuple[int, Any]] = []
        self.fail = fail
        self.closed = False

    def exchange(self, position: int, flags: Any = None) -> Tuple[Optional[Outcome], Any]:
        self.sent.append((position, flags))
        if len(self.sent) in self.fail:
            raise RuntimeError("refused")
        return None, {"position": position}

    def close(self) -> None:
        self.closed = True


def test_sequence_caller_sets_id_start_and_end() -> None:
    sender = FakeSender()
    call = SequenceCaller(sender, 2, 3, SequenceIds(), offset=1)
    outcomes = [call() for _ in range(6)]
    assert [flags for _, flags in sender.sent] == [
        (1, True, False), (1, False, False), (1, False, True),
        (2, True, False), (2, False, False), (2, False, True),
    ]  # fmt: skip
    assert [p for p, _ in sender.sent] == [1, 0, 1, 0, 1, 0]  # payloads in rotation
    assert [o.ended_sequence for o in outcomes] == [False, False, True] * 2
    call.finish()  # between sequences: nothing more to send
    assert len(sender.sent) == 6 and sender.closed


def test_sequence_caller_ends_a_sequence_cut_by_the_window_and_abandons_a_failed_one() -> None:
    sender = FakeSender(fail=(2,))
    call = SequenceCaller(sender, 1, 4, SequenceIds(), offset=0)
    call()
    with pytest.raises(RuntimeError):
        call()  # the second request of sequence 1 fails: the sequence is abandoned
    call()
    call()
    call.finish()  # sequence 2 is at its third request: one more carries END
    assert [flags for _, flags in sender.sent] == [
        (1, True, False), (1, False, False), (2, True, False), (2, False, False),
        (2, False, True),
    ]  # fmt: skip


def test_engine_counts_responses_first_responses_and_sequences() -> None:
    finished: List[int] = []

    def make(index: int) -> Any:
        count = [0]

        def call() -> Outcome:
            start = time.perf_counter()
            time.sleep(0.002)
            count[0] += 1
            return Outcome(responses=3, first_at=start + 0.001, ended_sequence=count[0] % 2 == 0)

        call.finish = lambda: finished.append(index)  # type: ignore[attr-defined]
        return call

    window = run_closed_loop(make, concurrency=2, warmup=0.05, duration=0.3)
    assert window.completed > 10 and window.errors == 0
    assert window.responses == 3 * window.completed
    assert abs(window.sequences - window.completed / 2) <= 2
    assert len(window.first_ms) == window.completed
    assert window.first_percentile_ms(50) < window.percentile_ms(50)
    assert sorted(finished) == [0, 1]  # each worker's finish ran once
    point = point_from_window(window, mode="sequence")
    assert point.sequences_per_s == pytest.approx(window.sequences / 0.3)
    assert point.responses_per_request == pytest.approx(3.0)


def _point(**extra: Any) -> PerfPoint:
    return PerfPoint(2, 100.0, 5.0, 8.0, 9.0, 6.0, 200, 0, **extra)


def test_report_of_each_mode() -> None:
    stream = PerfReport("sq", "h:1", "grpc", "builtin", 1.0, mode="streaming", streamed=True)
    stream.points.append(_point(responses_per_s=300.0, first_p50_ms=1.0, first_p90_ms=2.0,
                                first_p99_ms=3.0))  # fmt: skip
    lines = stream.table().splitlines()
    assert "streaming: decoupled model over a gRPC stream per client" in lines[0]
    assert lines[1].split()[:4] == ["conc", "req/s", "resp/s", "resp/req"]
    assert lines[2].split()[:7] == ["2", "100.0", "300.0", "3.00", "1.00", "2.00", "3.00"]
    data = stream.to_json()
    assert data["mode"] == "streaming" and data["streamed"] is True
    assert data["points"][0]["responses_per_request"] == 3.0
    assert data["points"][0]["first_response_p99_ms"] == 3.0
    sequence = PerfReport("seq", "h:1", "grpc", "builtin", 1.0, mode="sequence",
                          sequence_length=20)  # fmt: skip
    sequence.points.append(_point(sequences_per_s=5.0))
    lines = sequence.table().splitlines()
    assert "sequences of 20 requests, concurrency = live sequences" in lines[0]
    assert lines[1].split()[:3] == ["seqs", "seq/s", "infer/s"]
    assert lines[2].split()[:3] == ["2", "5.0", "100.0"]
    assert sequence.to_json()["sequence_length"] == 20
    assert "sequences_per_s" in sequence.to_json()["points"][0]
    plain = PerfReport("m", "h:1", "grpc", "builtin", 1.0, [_point()])
    assert plain.to_json()["mode"] == "plain"
    assert "responses_per_s" not in plain.to_json()["points"][0]


def test_perf_analyzer_gets_the_kind_options(tmp_path: Path) -> None:
    csv_path = tmp_path / "c.csv"
    stream = build_command("pa", "sq", "h:1", "grpc", 2, duration=1.0, csv_path=csv_path,
                           kind=KindFlags(streaming=True))  # fmt: skip
    assert stream[-1] == "--streaming"
    flags = KindFlags(sequence_length=7, sequence_id_range=(3, None)).options()
    assert flags == ["--sequence-length", "7", "--sequence-length-variation", "0",
                     "--sequence-id-range", "3", "--serial-sequences"]  # fmt: skip
    assert "3:9" in KindFlags(sequence_length=7, sequence_id_range=(3, 9)).options()
    points = parse_csv(
        "Concurrency,Inferences/Second,Response Throughput,p50 latency,p90 latency,"
        "p99 latency\n2,10,30,100,200,300\n"
    )
    assert points[0].responses_per_s == 30.0 and points[0].responses_per_request == 3.0


def test_input_data_of_a_model_without_batching_keeps_its_shape() -> None:
    import numpy as np

    payload = {"IN": np.array([3], np.int32), "TEXT": np.array([b"a b"], dtype=object)}
    data = perf_analyzer_input_data([payload], batched=False)["data"][0]
    assert data["IN"] == {"content": [3], "shape": [1]}
    assert data["TEXT"] == {"content": ["a b"], "shape": [1]}


def test_refusals_name_the_kind_and_the_fix() -> None:
    stream = ModelKind("sq", decoupled=True)
    text = str(http_refusal(stream, "http://h:8000"))
    assert "'sq' is a decoupled model" in text and "--url HOST:8001" in text
    sequence = model_kind({**SEQUENCE_CONFIG, "name": "seq"})
    bug = "INVALID_ARG: unexpected number of string elements 2 for inference input 'CORRID'"
    text = refused_message(sequence, bug, sequence_length=20)
    assert text.startswith("model 'seq', a sequence model (oldest strategy), refused the "
                           "first request of a sequence (20 requests")  # fmt: skip
    assert "remove the CORRID control" in text and "--sequence-ids string" in text
    plain = refused_message(ModelKind("m"), "INVALID_ARG: bad shape", sequence_length=20)
    assert "refused the generated request" in plain and "--shape NAME=d,d" in plain
    data = refused_message(sequence, "INVALID_ARG: VALUE must be > 0", sequence_length=20)
    assert "--shape NAME=d,d" in data  # the data, not the kind: the inputs' options
    unary = refused_message(ModelKind("e"), "UNIMPLEMENTED: ... decoupled ...", sequence_length=1)
    assert "decoupled: true" in unary
    notes = kind_notes(model_kind(SEQUENCE_CONFIG))
    assert len(notes) == 1 and "dynamic batching does not apply" in notes[0]


def test_tune_search_on_a_sequence_model() -> None:
    default = candidate_of(SEQUENCE_CONFIG)
    assert default.sequence and not default.dynamic
    space = search_space(8, 2, default=default, sequence=True)
    assert all(c.sequence and not c.dynamic and c.queue_delay_us == 0 for c in space[1:])
    assert {(c.instances, c.max_batch_size) for c in space[1:]} == {(2, 8), (2, 2), (1, 2)}
    assert space[1].describe() == "instances=2 max_batch=8 (sequence batcher)"
    override = apply_candidate(SEQUENCE_CONFIG, Candidate(1, 2, dynamic=False, sequence=True))
    assert override["max_batch_size"] == 2 and "dynamic_batching" not in override
    # the server fills in preferred sizes from the declared maximum: kept within the new one
    assert "preferred_batch_size" not in override["sequence_batching"]["oldest"]
    assert SEQUENCE_CONFIG["sequence_batching"]["oldest"]["preferred_batch_size"] == [8]


def test_write_best_on_a_sequence_model(tmp_path: Path) -> None:
    pytest.importorskip("google.protobuf", reason="config.pbtxt is written with protobuf")
    from tritonpy._tooling.pbtxt import load_config

    (tmp_path / "config.pbtxt").write_text(
        'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'
        "sequence_batching { oldest { max_candidate_sequences: 4 preferred_batch_size: [4, 8] } }\n"
    )
    result = TuneResult("m", None)
    result.trials = [
        Trial(Candidate(1, 8, dynamic=False, sequence=True, label="default"), None, 5.0, 1.0),
        Trial(Candidate(2, 4, dynamic=False, sequence=True), None, 10.0, 1.0),
    ]
    written = load_config(write_best(result, tmp_path) or tmp_path / "none")
    assert written.max_batch_size == 4 and written.instance_group[0].count == 2
    assert written.WhichOneof("scheduling_choice") == "sequence_batching"
    assert list(written.sequence_batching.oldest.preferred_batch_size) == [4]
    assert written.sequence_batching.oldest.max_candidate_sequences == 4


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--sequence-length", "0", "expected a positive integer"),
        ("--sequence-id-range", "5:5", "1 <= START < END"),
        ("--sequence-id-range", "x", "1 <= START < END"),
    ],
)
def test_bad_sequence_options_exit_2(
    option: str, value: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["perf", "m", option, value])
    assert stopped.value.code == 2
    assert expected in capsys.readouterr().err
