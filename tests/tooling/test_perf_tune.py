"""``tritonpy tune``'s search space, scoring, the configuration override and config.pbtxt
writing (no server: the real-server run is in tests/integration/test_perf_serve.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest

from tritonpy.perf._plot import plot_trials
from tritonpy.perf._report import PerfPoint, PerfReport
from tritonpy.perf._tune import (
    Candidate,
    Trial,
    TuneResult,
    apply_candidate,
    candidate_of,
    score_report,
    search_space,
    write_best,
)


def test_search_space_batching_model() -> None:
    default = Candidate(1, 32, 0, (), "default")
    space = search_space(32, 2, default=default)
    assert space[0] is default
    keys = [(c.instances, c.max_batch_size, c.queue_delay_us, c.preferred) for c in space]
    assert len(keys) == len(set(keys))  # no configuration measured twice
    assert {c.instances for c in space} == {1, 2}
    assert {c.max_batch_size for c in space} == {32, 8}  # never above the declared one
    assert {c.queue_delay_us for c in space} == {0, 1000, 5000}
    assert any(c.preferred == (16,) for c in space)
    # the default's settings are not measured again under another name
    assert (
        sum(1 for c in space[1:] if (c.instances, c.max_batch_size, c.queue_delay_us) == (1, 32, 0))
        == 0
    )


def test_a_default_without_dynamic_batching_is_its_own_configuration() -> None:
    served = {"max_batch_size": 8, "instance_group": [{"count": 1, "kind": "KIND_CPU"}]}
    default = candidate_of(served)
    assert not default.dynamic and "no dynamic batching" in default.describe()
    space = search_space(8, 1, default=default)
    # the same numbers with dynamic batching on are measured too: they are not the default
    assert Candidate(1, 8, 0) in space[1:]
    assert "dynamic_batching" not in apply_candidate({"dynamic_batching": {}}, default)


def test_search_space_non_batching_model() -> None:
    space = search_space(0, 4)
    assert [c.instances for c in space] == [4, 3, 2, 1]
    assert all(c.max_batch_size == 0 for c in space)


def test_candidate_of_and_apply() -> None:
    served = {
        "name": "m",
        "max_batch_size": 16,
        "instance_group": [{"kind": "KIND_CPU", "count": 1, "name": "m_0"}],
        "dynamic_batching": {"preferred_batch_size": [16], "max_queue_delay_microseconds": "0"},
        "parameters": {"top_k": {"string_value": "5"}},
    }
    assert candidate_of(served) == Candidate(1, 16, 0, (16,), "default")
    override = apply_candidate(served, Candidate(2, 4, 1000))
    assert override["instance_group"] == [{"kind": "KIND_CPU", "count": 2, "name": "m_0"}]
    assert override["max_batch_size"] == 4
    assert override["dynamic_batching"] == {"max_queue_delay_microseconds": 1000}
    assert override["parameters"] == served["parameters"]
    assert served["instance_group"][0]["count"] == 1  # the served config is not changed


def _report(*points: tuple) -> PerfReport:
    report = PerfReport("m", "u", "grpc", "builtin", 1.0)
    for conc, tput, p99, errors in points:
        report.points.append(PerfPoint(conc, tput, 1.0, 1.0, p99, 1.0, 10, errors))
    return report


def test_score_respects_budget_and_errors() -> None:
    report = _report((1, 100.0, 5.0, 0), (4, 300.0, 20.0, 0), (16, 500.0, 80.0, 3))
    assert score_report(report, None) == (300.0, 20.0)  # the erroring point never wins
    assert score_report(report, 10.0) == (100.0, 5.0)
    assert score_report(report, 1.0)[0] == 0.0


def test_result_best_gain_and_table() -> None:
    result = TuneResult("m", 50.0)
    result.trials = [
        Trial(Candidate(1, 32, label="default"), _report((1, 100.0, 5.0, 0)), 100.0, 5.0),
        Trial(Candidate(2, 32, 1000), _report((4, 150.0, 9.0, 0)), 150.0, 9.0),
        Trial(Candidate(2, 8), None, 0.0, error="refused"),
    ]
    assert result.best is result.trials[1]
    assert result.gain == pytest.approx(1.5)
    table = result.table()
    assert "* " in table.splitlines()[3] or table.splitlines()[3].lstrip().startswith("*")
    assert "best / default throughput: 1.50x" in table
    assert result.to_json()["best"] == "instances=2 max_batch=32 delay=1000us"
    # measured again back to back, the pair decides the stated gain
    result.confirmation = (
        Trial(Candidate(1, 32, label="default"), None, 120.0),
        Trial(Candidate(2, 32, 1000), None, 132.0),
    )
    assert result.gain == pytest.approx(1.1)
    assert "default 120.0 infer/s, best 132.0 infer/s" in result.table()
    assert result.to_json()["confirmation"] == {"default": 120.0, "best": 132.0}


def test_nothing_to_write_when_the_default_wins(tmp_path: Path) -> None:
    (tmp_path / "config.pbtxt").write_text(CONFIG)
    result = TuneResult("m", None)
    result.trials = [
        Trial(Candidate(1, 32, label="default"), _report((1, 100.0, 5.0, 0)), 100.0, 5.0),
        Trial(Candidate(2, 32), _report((1, 90.0, 5.0, 0)), 90.0, 5.0),
    ]
    assert "the served configuration is the best one measured" in result.table()
    assert write_best(result, tmp_path) is None
    assert (tmp_path / "config.pbtxt").read_text() == CONFIG


CONFIG = """\
# my model
name: "m"
backend: "python"
max_batch_size: 32
parameters { key: "top_k" value { string_value: "5" } }
instance_group { kind: KIND_CPU }
instance_group { kind: KIND_CPU count: 3 }
dynamic_batching {
  preferred_batch_size: [32]
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 }
}
"""


def test_write_best_keeps_the_users_fields(tmp_path: Path) -> None:
    pytest.importorskip("google.protobuf", reason="config.pbtxt is written with protobuf")
    from tritonpy._tooling.pbtxt import load_config

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.pbtxt").write_text(CONFIG)
    result = TuneResult("m", None)
    result.trials = [
        Trial(Candidate(1, 32, label="default"), _report((4, 5.0, 1.0, 0)), 5.0, 1.0),
        Trial(Candidate(2, 8, 1000, (4,)), _report((4, 10.0, 1.0, 0)), 10.0, 1.0),
    ]
    path = write_best(result, model)
    assert path == model / "config.pbtxt"
    written = load_config(path)
    assert written.max_batch_size == 8
    assert [(g.count, g.kind) for g in written.instance_group] == [
        (2, written.instance_group[0].KIND_CPU)
    ]
    assert written.dynamic_batching.max_queue_delay_microseconds == 1000
    assert list(written.dynamic_batching.preferred_batch_size) == [4]
    assert written.dynamic_batching.default_queue_policy.timeout_action == 1  # DELAY kept
    assert written.parameters["top_k"].string_value == "5"
    assert written.dynamic_batching.default_queue_policy.default_timeout_microseconds == 100
    assert written.backend == "python"


def test_write_best_writes_nothing_without_a_winner(tmp_path: Path) -> None:
    (tmp_path / "config.pbtxt").write_text(CONFIG)
    result = TuneResult("m", 1.0)
    result.trials = [Trial(Candidate(1, 32, label="default"), None, 0.0)]
    assert write_best(result, tmp_path) is None
    assert (tmp_path / "config.pbtxt").read_text() == CONFIG


def test_plot_without_matplotlib_says_so(tmp_path: Path) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        line = plot_trials(TuneResult("m", None), tmp_path / "t.png")
        assert line.startswith("plot skipped: matplotlib is not installed")
        assert not (tmp_path / "t.png").exists()
    else:
        result = TuneResult("m", 10.0)
        result.trials = [Trial(Candidate(1, 0), _report((1, 5.0, 2.0, 0)), 5.0, 2.0)]
        assert plot_trials(result, tmp_path / "t.png") == f"wrote {tmp_path / 't.png'}"
        assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")


def test_confirmation_measures_abba_and_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    # default, best, best, default: a change of load during the pair falls on both alike
    from tritonpy.perf import _tune

    default = _tune.Trial(_tune.Candidate(1, 8, 0, (), "default"), None, 100.0, 5.0)
    best = _tune.Trial(_tune.Candidate(1, 8, 1000), None, 130.0, 6.0)
    result = _tune.TuneResult("m", None, trials=[default, best])
    order: List[Any] = []
    scores = iter([90.0, 120.0, 140.0, 110.0])

    def trial(session: Any, candidate: Any, reload: bool) -> Any:
        order.append(candidate)
        return _tune.Trial(candidate, None, next(scores), float(len(order)))

    monkeypatch.setattr(_tune, "_trial", trial)
    session = type("S", (), {"say": staticmethod(lambda line: None)})()
    _tune._confirm(session, result)  # type: ignore[arg-type]
    assert order == [default.candidate, best.candidate, best.candidate, default.candidate]
    assert result.confirmation is not None
    again_default, again_best = result.confirmation
    assert (again_default.score, again_best.score) == (100.0, 130.0)
    assert (again_default.best_p99_ms, again_best.best_p99_ms) == (4.0, 3.0)
    assert result.gain == pytest.approx(1.3)


def test_write_best_writes_nothing_when_the_winner_does_not_hold(tmp_path: Path) -> None:
    # the sweep's winner measured again next to the default was no faster: noise, not a gain
    (tmp_path / "config.pbtxt").write_text(CONFIG)
    default = Trial(Candidate(1, 32, label="default"), None, 100.0)
    best = Trial(Candidate(2, 32), None, 120.0)
    result = TuneResult("m", None, trials=[default, best])
    result.confirmation = (
        Trial(default.candidate, None, 110.0),
        Trial(best.candidate, None, 104.0),
    )
    assert not result.holds
    assert write_best(result, tmp_path) is None
    assert (tmp_path / "config.pbtxt").read_text() == CONFIG
    assert "did not beat the default when measured again" in result.table()
    result.confirmation = (
        Trial(default.candidate, None, 100.0),
        Trial(best.candidate, None, 115.0),
    )
    assert result.holds


def test_a_gain_inside_the_noise_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "config.pbtxt").write_text(CONFIG)
    default = Trial(Candidate(1, 32, label="default"), None, 100.0)
    best = Trial(Candidate(2, 32), None, 120.0)
    result = TuneResult("m", None, trials=[default, best])
    result.confirmation = (
        Trial(default.candidate, None, 100.0),
        Trial(best.candidate, None, 104.0),
    )
    result.confirmation_runs = (99.0, 103.0, 105.0, 101.0)
    assert result.noise == pytest.approx(0.05)  # the floor: these runs spread less
    assert not result.holds  # 1.04x is inside it
    assert "more than the noise (5% between two runs" in result.table()
    assert write_best(result, tmp_path) is None
    # a gain above the floor but inside the runs' own spread is noise too
    result.confirmation = (
        Trial(default.candidate, None, 100.0),
        Trial(best.candidate, None, 115.0),
    )
    result.confirmation_runs = (80.0, 100.0, 130.0, 120.0)
    assert result.noise == pytest.approx(40.0 / 100.0)
    assert not result.holds
    # a clear gain: every run of the winner beats every run of the default
    result.confirmation_runs = (99.0, 114.0, 116.0, 101.0)
    assert result.holds and result.to_json()["holds"] is True


def test_the_default_is_reloaded_with_its_own_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a load without a configuration after an override keeps serving the override
    from tritonpy.perf import _tune

    served = {"name": "m", "max_batch_size": 0, "instance_group": [{"count": 1}]}
    loads: List[Any] = []

    class Client:
        def __init__(self) -> None:
            self._client = self

        def _call(self, what: str, function: Any, *args: Any, **kwargs: Any) -> None:
            loads.append(kwargs.get("config"))
            served["instance_group"] = json.loads(kwargs["config"])["instance_group"]

        def load_model(self, name: str, config: str) -> None:
            raise AssertionError("called through _call")

        def model_config(self, name: str) -> Any:
            return served

    monkeypatch.setattr(_tune, "run_perf", lambda *a, **k: _report((1, 10.0, 1.0, 0)))
    base = {"name": "m", "max_batch_size": 0, "instance_group": [{"count": 1}]}
    session = _tune._Session(Client(), "url", "m", base, None, None, print, None)  # type: ignore[arg-type]
    two = _tune.Trial(_tune.Candidate(2, 0), None, 0.0)
    assert _tune._trial(session, two.candidate, True).error == ""
    assert _tune._trial(session, candidate_of(base), True).error == ""
    assert json.loads(loads[0])["instance_group"][0]["count"] == 2
    assert json.loads(loads[1]) == base  # not None: the server's files, as it read them
    assert served["instance_group"] == [{"count": 1}]
