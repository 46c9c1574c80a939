"""``tritonpy tune``: serve a model directory in the embedded tritonserver, measure it under
a small sweep of the settings that matter on CPU, and pick the configuration with the highest
throughput whose p99 latency meets a budget.

The settings: instance count (1 .. cores), ``max_batch_size`` (the declared one and a
quarter of it), dynamic batching's ``max_queue_delay_microseconds`` (0, 1 ms, 5 ms) and
``preferred_batch_size``. Each configuration is loaded with the server's explicit model
control (a load request carrying the configuration as an override: no restart) and measured
with the same engine as ``tritonpy perf``. The search stops at ``max_minutes``; the served
configuration ("default") is always measured first. A decoupled or sequence model is measured
in its mode (streams, sequences); a sequence model's sweep leaves dynamic batching out (the
sequence batcher forms its batches).

Example::

    result = tune("model_repository/image_preprocess", latency_budget_ms=50, max_minutes=3)
    result = tune("model_repository/image_preprocess", TuneOptions(latency_budget_ms=50))
    print(result.table())
    write_best(result, "model_repository/image_preprocess")    # config.pbtxt, other fields kept
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._runtime.errors import ToolError, TritonRequestError
from .._tooling.options import changed
from ..client import model_kind
from ._candidates import QUEUE_DELAYS_US as QUEUE_DELAYS_US  # tune's configurations
from ._candidates import Candidate as Candidate
from ._candidates import apply_candidate as apply_candidate
from ._candidates import candidate_of as candidate_of
from ._candidates import search_space as search_space
from ._companions import companions, ensemble_members
from ._engine import Progress
from ._options import PerfOptions, TuneOptions
from ._refusals import kind_notes
from ._report import PerfReport, render_table
from ._runner import run_perf

#: the smallest relative gain tune believes: two runs of one configuration a minute apart
#: differ by a few percent on a quiet machine
NOISE_FLOOR = 0.05


@dataclass
class Trial:
    """One measured candidate: its report, and the score (the highest throughput of a point
    within the latency budget without errors; 0 when none is)."""

    candidate: Candidate
    report: Optional[PerfReport]
    score: float
    best_p99_ms: float = float("nan")
    error: str = ""


@dataclass
class TuneResult:
    """The whole search: trials in the order measured, the budget and the winner."""

    model: str
    latency_budget_ms: Optional[float]
    trials: List[Trial] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    #: the default and the best measured twice more after the sweep (ABBA), pooled
    confirmation: Optional[Tuple[Trial, Trial]] = None
    #: the four scores of the confirmation in the order measured: default, best, best, default
    confirmation_runs: Tuple[float, ...] = ()

    @property
    def default(self) -> Optional[Trial]:
        """The trial of the served configuration (measured first)."""
        return self.trials[0] if self.trials else None

    @property
    def best(self) -> Optional[Trial]:
        """The trial with the highest score (None when none met the budget)."""
        scored = [t for t in self.trials if t.score > 0]
        return max(scored, key=lambda t: t.score) if scored else None

    @property
    def gain(self) -> Optional[float]:
        """Best score / default score, from the confirmation pair when there is one (None
        when either is missing)."""
        if self.confirmation is not None:
            default, best = self.confirmation
        else:
            found_default, found_best = self.default, self.best
            if found_default is None or found_best is None:
                return None
            default, best = found_default, found_best
        if default.score <= 0:
            return None
        return best.score / default.score

    @property
    def noise(self) -> float:
        """The relative difference two measurements of one configuration may show on this
        machine: the larger spread of the default's and the winner's repeated measurements
        (``|a - b| / mean``), never below :data:`NOISE_FLOOR`."""
        runs = self.confirmation_runs
        spread = NOISE_FLOOR
        if len(runs) == 4 and min(runs) > 0:
            for first, second in ((runs[0], runs[3]), (runs[1], runs[2])):
                spread = max(spread, abs(first - second) / ((first + second) / 2.0))
        return spread

    @property
    def holds(self) -> bool:
        """Whether the winner's gain is real: measured again next to the default (ABBA), its
        worse run beat the default's better one and the gain exceeds :attr:`noise` (True
        when there was no such confirmation)."""
        if self.confirmation is None:
            return True
        gain = self.gain
        if gain is None or gain - 1.0 <= self.noise:
            return False
        runs = self.confirmation_runs
        return len(runs) != 4 or min(runs[1], runs[2]) > max(runs[0], runs[3])

    def table(self) -> str:
        """One line per trial; the best marked with ``*``."""
        best = self.best
        rows = []
        for trial in self.trials:
            rows.append(
                [
                    "*" if trial is best else "",
                    trial.candidate.describe(),
                    f"{trial.score:.1f}",
                    "-" if math.isnan(trial.best_p99_ms) else f"{trial.best_p99_ms:.2f}",
                    trial.error[:60],
                ]
            )
        budget = "none" if self.latency_budget_ms is None else f"{self.latency_budget_ms:g} ms"
        notes = list(self.notes)
        if self.confirmation is not None:
            again_default, again_best = self.confirmation
            notes.append(
                f"measured again (default, best, best, default; means): default "
                f"{again_default.score:.1f} infer/s, best {again_best.score:.1f} infer/s"
            )
        if self.best is not None and self.best is self.default:
            notes.append("the served configuration is the best one measured")
        elif self.gain is not None:
            notes.append(f"best / default throughput: {self.gain:.2f}x")
            if not self.holds:
                notes.append(
                    f"the winner did not beat the default when measured again by more than the "
                    f"noise ({self.noise:.0%} between two runs of one configuration): nothing "
                    f"to write"
                )
        return render_table(
            f"tune {self.model} (p99 budget {budget})",
            ("", "configuration", "infer/s", "p99 ms", "error"),
            rows,
            notes,
        )

    def to_json(self) -> Dict[str, Any]:
        """The search as JSON-ready data."""
        return {
            "model": self.model,
            "latency_budget_ms": self.latency_budget_ms,
            "gain": self.gain,
            "noise": self.noise,
            "holds": self.holds,
            "confirmation_runs": list(self.confirmation_runs),
            "confirmation": None
            if self.confirmation is None
            else {"default": self.confirmation[0].score, "best": self.confirmation[1].score},
            "best": None if self.best is None else self.best.candidate.describe(),
            "trials": [
                {
                    "configuration": t.candidate.describe(),
                    "score": t.score,
                    "error": t.error,
                    "report": None if t.report is None else t.report.to_json(),
                }
                for t in self.trials
            ],
        }


def score_report(report: PerfReport, budget_ms: Optional[float]) -> Tuple[float, float]:
    """(throughput, its p99) of the best point within ``budget_ms`` and without errors."""
    best, p99 = 0.0, float("nan")
    for point in report.points:
        if point.errors or point.completed <= 0:
            continue
        if budget_ms is not None and not point.p99_ms <= budget_ms:
            continue
        if point.throughput > best:
            best, p99 = point.throughput, point.p99_ms
    return best, p99


def _hints(model_dir: Path) -> Dict[str, str]:
    from ..config import load_model_class
    from ._inputs import hints_from_class

    try:
        loaded = load_model_class(model_dir)
    except Exception:  # a model the tooling cannot import still runs in the server
        return {}
    return hints_from_class(loaded.cls) if loaded.is_tritonpy else {}


@dataclass(frozen=True)
class _Session:
    """One tuning run on a started server: the model, its served configuration, the sweep's
    options and where events and progress go."""

    client: Any  # tritonpy.client.InferClient (imported when the server is up)
    url: str
    name: str
    base: Dict[str, Any]
    options: PerfOptions
    budget_ms: Optional[float]
    say: Callable[[str], None]
    on_progress: Optional[Callable[[Progress], None]]


def _model_path(model_dir: Any) -> Path:
    model_path = Path(model_dir).resolve()
    if not (model_path / "config.pbtxt").is_file() and not any(model_path.glob("*/model.py")):
        raise ToolError(
            f"tritonpy tune {str(model_dir)!r}: not a model directory (no config.pbtxt or "
            "<version>/model.py). Pass the directory of one model inside a repository."
        )
    members = ensemble_members(model_path)
    if members:
        raise ToolError(
            f"tritonpy tune {str(model_dir)!r}: {model_path.name!r} is an ensemble, which has "
            "no instances or batching of its own (Triton refuses instance_group on an "
            f"ensemble); tune its members instead: tritonpy tune "
            f"{model_path.parent / members[0]} (members: {', '.join(members)})"
        )
    return model_path


def tune(
    model_dir: Any,
    options: Optional[TuneOptions] = None,
    *,
    on_event: Optional[Callable[[str], None]] = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
    **changes: Any,
) -> TuneResult:
    """Search the configurations of the model in ``model_dir`` (see the module's docstring)
    as ``options`` (a :class:`~tritonpy.perf.TuneOptions`) says; keyword arguments replace
    its fields, or its ``measure``'s (``duration=1.0``). ``on_event`` gets a line per step
    (the CLI prints them); nothing is printed here. A decoupled model is measured over gRPC
    streams, a sequence model with sequences of ``sequence_length`` requests (see
    :class:`~tritonpy.perf.PerfOptions`)."""
    from ..client import InferClient
    from ..server import TritonServer

    chosen = changed(TuneOptions, options, changes)
    model_path = _model_path(model_dir)
    name = model_path.name
    say = on_event or (lambda line: None)
    deadline = time.monotonic() + chosen.max_minutes * 60.0
    result = TuneResult(name, chosen.latency_budget_ms)
    measure = replace(chosen.measure, concurrency=tuple(chosen.measure.concurrency),
                      hints=_hints(model_path), specs=dict(chosen.measure.specs),
                      shapes=dict(chosen.measure.shapes))  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tritonpy-tune-") as scratch:
        repository = Path(scratch)
        os.symlink(model_path, repository / name)  # the user's directory stays untouched
        needed = companions(model_path)  # an ensemble's members, a BLS caller's callees
        for companion in needed:
            os.symlink(companion, repository / companion.name)
        beside = f" (with {', '.join(c.name for c in needed)})" if needed else ""
        say(f"starting tritonserver on {name}{beside}")
        with TritonServer(repository, **(chosen.server_options or {})) as server:
            client = InferClient(server.grpc_url, "grpc")
            try:
                session = _Session(client, server.grpc_url, name, client.model_config(name),
                                   measure, chosen.latency_budget_ms, say, on_progress)  # fmt: skip
                cores = chosen.cores or os.cpu_count() or 1
                _search(session, result, cores, deadline, chosen.max_minutes)
            finally:
                client.close()
    return result


def _search(
    session: _Session, result: TuneResult, cores: int, deadline: float, max_minutes: float
) -> None:
    """Measure the candidates in order until the deadline, then confirm the winner."""
    default = candidate_of(session.base)
    kind = model_kind(session.base)
    for line in kind_notes(kind):
        session.say(line)
        result.notes.append(line)
    space = search_space(default.max_batch_size, cores, default=default, sequence=kind.sequence)
    options = session.options
    per_trial = len(options.concurrency) * (options.duration + options.warmup) + 2.0
    for index, candidate in enumerate(space):
        if index > 0 and time.monotonic() + per_trial > deadline:
            result.notes.append(
                f"stopped after {index} of {len(space)} configurations "
                f"(--max-minutes {max_minutes:g})"
            )
            break
        session.say(f"[{index + 1}/{len(space)}] {candidate.describe()}")
        result.trials.append(_trial(session, candidate, index > 0))
    if time.monotonic() + 4 * per_trial <= deadline:
        _confirm(session, result)
    elif result.best is not result.default:
        result.notes.append(
            "the winner was not measured again next to the default (no time left): "
            "differences within run-to-run noise may not hold"
        )


def _trial(session: _Session, candidate: Candidate, reload: bool) -> Trial:
    client, name = session.client, session.name
    try:
        if reload:
            # the default is loaded as an override too: a load without one after an override
            # keeps serving the override (tritonserver 2.51), and the "default" measured then
            # was the previous winner
            settings = session.base if candidate.label == "default" else None
            override = json.dumps(settings or apply_candidate(session.base, candidate))
            client._call(f"model {name!r}", client._client.load_model, name, config=override)
            served = candidate_of(client.model_config(name))
            if served.instances != candidate.instances:
                raise ToolError(
                    f"model {name!r}: loaded with {candidate.instances} instance(s) but the "
                    f"server reports {served.instances}; the override was not applied."
                )
        report = run_perf(
            name, session.url, session.options, protocol="grpc", on_progress=session.on_progress
        )
    except (ToolError, TritonRequestError) as exc:  # a configuration the server refused
        return Trial(candidate, None, 0.0, error=str(exc))
    score, p99 = score_report(report, session.budget_ms)
    errors = [p.first_error for p in report.points if p.first_error]
    return Trial(candidate, report, score, p99, errors[0] if errors else "")


def _confirm(session: _Session, result: TuneResult) -> None:
    """Measure the default and the winner twice more, in the order default, winner, winner,
    default: on a busy machine two points measured minutes apart differ by more than many
    real gains, and a change of load during the pair falls on both alike this way. The gain
    is stated from the mean score of each."""
    best, default = result.best, result.default
    if best is None or default is None or best is default:
        return
    session.say(f"confirming: default, {best.candidate.describe()}, the same again reversed")
    first_default = _trial(session, default.candidate, True)
    first_best = _trial(session, best.candidate, True)
    second_best = _trial(session, best.candidate, True)
    second_default = _trial(session, default.candidate, True)
    result.confirmation = (
        _pooled(first_default, second_default),
        _pooled(first_best, second_best),
    )
    result.confirmation_runs = tuple(
        t.score for t in (first_default, first_best, second_best, second_default)
    )


def _pooled(first: Trial, second: Trial) -> Trial:
    """One trial from two measurements of a candidate: the mean score (0 if either failed),
    the worse p99, the later report."""
    failed = first.score <= 0 or second.score <= 0
    return Trial(
        second.candidate,
        second.report,
        0.0 if failed else (first.score + second.score) / 2.0,
        max(first.best_p99_ms, second.best_p99_ms),
        first.error or second.error,
    )


def write_best(result: TuneResult, model_dir: Any) -> Optional[Path]:
    """Store the best candidate's settings in ``model_dir/config.pbtxt`` through the config
    tooling: instance count, max_batch_size, dynamic batching delay and preferred sizes; every
    other field of the file is kept. Returns the path, or None when nothing is written: no
    candidate met the budget, the served configuration ("default") is the best, or the best
    did not beat it when the two were measured again."""
    from .._tooling.pbtxt import load_config, new_config, write_config

    best = result.best
    if best is None or best is result.default or not result.holds:
        return None
    path = Path(model_dir) / "config.pbtxt"
    message = load_config(path) if path.is_file() else new_config()
    if not message.name:
        message.name = Path(model_dir).resolve().name
        message.backend = "python"
    candidate = best.candidate
    if len(message.instance_group) == 0:
        group = message.instance_group.add()
        group.kind = group.KIND_CPU
    del message.instance_group[1:]
    message.instance_group[0].count = candidate.instances
    if candidate.max_batch_size > 0 and (candidate.dynamic or candidate.sequence):
        message.max_batch_size = candidate.max_batch_size
        if message.HasField("sequence_batching") and message.sequence_batching.HasField("oldest"):
            oldest = message.sequence_batching.oldest
            kept = [v for v in oldest.preferred_batch_size if v <= candidate.max_batch_size]
            del oldest.preferred_batch_size[:]
            oldest.preferred_batch_size.extend(kept)
    if candidate.max_batch_size > 0 and candidate.dynamic:
        batching = message.dynamic_batching
        batching.SetInParent()
        batching.max_queue_delay_microseconds = candidate.queue_delay_us
        del batching.preferred_batch_size[:]
        batching.preferred_batch_size.extend(candidate.preferred)
    return write_config(path, message)
