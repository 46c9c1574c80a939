"""``tritonpy tune``: serve a model directory in the embedded tritonserver, measure it under
a small sweep of the settings that matter on CPU, and pick the configuration with the highest
throughput whose p99 latency meets a budget.

The settings: instance count (1 .. cores), ``max_batch_size`` (the declared one and a
quarter of it), dynamic batching's ``max_queue_delay_microseconds`` (0, 1 ms, 5 ms) and
``preferred_batch_size``. Each configuration is loaded with the server's explicit model
control (a load request carrying the configuration as an override: no restart) and measured
with the same engine as ``tritonpy perf``. The search stops at ``max_minutes``; the served
configuration ("default") is always measured first.

Example::

    result = tune("model_repository/image_preprocess", latency_budget_ms=50, max_minutes=3)
    print(result.table())
    write_best(result, "model_repository/image_preprocess")    # config.pbtxt, other fields kept
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .._runtime.errors import ToolError
from ._engine import Progress
from ._inputs import InputSpec
from ._report import PerfReport, render_table
from ._runner import EngineChoice, PerfOptions, run_perf

#: queue delays tried when the model batches (microseconds)
QUEUE_DELAYS_US = (0, 1000, 5000)


@dataclass(frozen=True)
class Candidate:
    """One configuration of the sweep. ``max_batch_size`` 0: the model does not batch (no
    dynamic batching fields); ``preferred`` empty: Triton's default."""

    instances: int
    max_batch_size: int
    queue_delay_us: int = 0
    preferred: Tuple[int, ...] = ()
    label: str = ""
    #: False for a served configuration without ``dynamic_batching`` (no batches formed)
    dynamic: bool = True

    @property
    def key(self) -> Tuple[int, int, int, Tuple[int, ...], bool]:
        """The settings, without the label: equal keys are the same configuration."""
        dynamic = self.dynamic and self.max_batch_size > 0
        return (self.instances, self.max_batch_size, self.queue_delay_us, self.preferred, dynamic)

    def describe(self) -> str:
        """``instances=2 max_batch=32 delay=1000us preferred=[8]`` (or the label)."""
        text = f"instances={self.instances}"
        if self.max_batch_size > 0 and not self.dynamic:
            text += f" max_batch={self.max_batch_size} no dynamic batching"
        elif self.max_batch_size > 0:
            text += f" max_batch={self.max_batch_size} delay={self.queue_delay_us}us"
            if self.preferred:
                text += f" preferred={list(self.preferred)}"
        return f"{self.label}: {text}" if self.label else text


def search_space(
    declared_max_batch: int, cores: int, *, default: Optional[Candidate] = None
) -> List[Candidate]:
    """The candidates in the order they are measured: ``default`` first, then the others by
    promise on CPU (more instances and a short queue delay first). No duplicates.

    Example::

        [c.describe() for c in search_space(8, 2)][:3]
    """
    found: List[Candidate] = [default] if default is not None else []
    instances = list(range(1, max(cores, 1) + 1))
    if declared_max_batch <= 0:
        found += [Candidate(n, 0) for n in reversed(instances)]
    else:
        sizes = [declared_max_batch]
        if declared_max_batch // 4 >= 2:
            sizes.append(declared_max_batch // 4)
        for delay in QUEUE_DELAYS_US:
            for n in reversed(instances):
                for size in sizes:
                    found.append(Candidate(n, size, delay))
        biggest = max(instances)
        half = max(declared_max_batch // 2, 1)
        found.append(Candidate(biggest, declared_max_batch, QUEUE_DELAYS_US[1], (half,)))
    unique: List[Candidate] = []
    seen = set()
    for candidate in found:
        if candidate.key not in seen:
            seen.add(candidate.key)
            unique.append(candidate)
    return unique


def candidate_of(config: Dict[str, Any], label: str = "default") -> Candidate:
    """The candidate a served configuration (JSON form) stands for."""
    groups = config.get("instance_group") or [{}]
    instances = sum(int(g.get("count", 1) or 1) for g in groups)
    batching = config.get("dynamic_batching") or {}
    return Candidate(
        instances,
        int(config.get("max_batch_size", 0) or 0),
        int(batching.get("max_queue_delay_microseconds", 0) or 0),
        tuple(int(s) for s in batching.get("preferred_batch_size", []) or ()),
        label,
        "dynamic_batching" in config,
    )


def apply_candidate(config: Dict[str, Any], candidate: Candidate) -> Dict[str, Any]:
    """A copy of ``config`` (JSON form) with the candidate's settings; the first instance
    group keeps its kind and other fields, further groups are dropped (the count says it)."""
    result = copy.deepcopy(config)
    groups = result.get("instance_group") or [{"kind": "KIND_CPU"}]
    first = dict(groups[0])
    first["count"] = candidate.instances
    first.setdefault("kind", "KIND_CPU")
    result["instance_group"] = [first]
    if candidate.max_batch_size > 0 and not candidate.dynamic:
        result["max_batch_size"] = candidate.max_batch_size
        result.pop("dynamic_batching", None)
    elif candidate.max_batch_size > 0:
        result["max_batch_size"] = candidate.max_batch_size
        batching = dict(result.get("dynamic_batching") or {})
        batching["max_queue_delay_microseconds"] = candidate.queue_delay_us
        if candidate.preferred:
            batching["preferred_batch_size"] = list(candidate.preferred)
        else:
            batching.pop("preferred_batch_size", None)
        result["dynamic_batching"] = batching
    return result


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
    def holds(self) -> bool:
        """Whether the best trial beat the default again when the two were measured once more
        (True when there was no such confirmation)."""
        return self.confirmation is None or (self.gain is not None and self.gain > 1.0)

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
                notes.append("the winner did not beat the default when measured again: noise")
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
    from ..config._loader import load_model_class
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

    client: Any  # tritonpy.server._client.InferClient (imported with the server)
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
    return model_path


def tune(
    model_dir: Any,
    *,
    latency_budget_ms: Optional[float] = None,
    max_minutes: float = 5.0,
    concurrency: Sequence[int] = (1, 4, 16),
    duration: float = 2.0,
    warmup: float = 0.5,
    engine: EngineChoice = "builtin",
    specs: Optional[Mapping[str, InputSpec]] = None,
    shapes: Optional[Mapping[str, Sequence[int]]] = None,
    cores: Optional[int] = None,
    on_event: Optional[Callable[[str], None]] = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
    server_options: Optional[Dict[str, Any]] = None,
) -> TuneResult:
    """Search the configurations of the model in ``model_dir`` (see the module's docstring).
    ``on_event`` gets a line per step (the CLI prints them); nothing is printed here."""
    from ..server import TritonServer
    from ..server._client import InferClient

    model_path = _model_path(model_dir)
    name = model_path.name
    say = on_event or (lambda line: None)
    deadline = time.monotonic() + max_minutes * 60.0
    result = TuneResult(name, latency_budget_ms)
    options = PerfOptions(
        concurrency=tuple(concurrency), duration=duration, warmup=warmup,
        hints=_hints(model_path), engine=engine, specs=dict(specs or {}),
        shapes=dict(shapes or {}),
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tritonpy-tune-") as scratch:
        repository = Path(scratch)
        os.symlink(model_path, repository / name)  # the user's directory stays untouched
        say(f"starting tritonserver on {name}")
        with TritonServer(repository, **(server_options or {})) as server:
            client = InferClient(server.grpc_url, "grpc")
            try:
                session = _Session(client, server.grpc_url, name, client.model_config(name),
                                   options, latency_budget_ms, say, on_progress)  # fmt: skip
                _search(session, result, cores or os.cpu_count() or 1, deadline, max_minutes)
            finally:
                client.close()
    return result


def _search(
    session: _Session, result: TuneResult, cores: int, deadline: float, max_minutes: float
) -> None:
    """Measure the candidates in order until the deadline, then confirm the winner."""
    default = candidate_of(session.base)
    space = search_space(default.max_batch_size, cores, default=default)
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
        if reload and candidate.label == "default":
            # the configuration of the user's files, as the server reads them
            client._call(f"model {name!r}", client._client.load_model, name)
        elif reload:
            override = json.dumps(apply_candidate(session.base, candidate))
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
    except ToolError as exc:
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
    if candidate.max_batch_size > 0 and candidate.dynamic:
        message.max_batch_size = candidate.max_batch_size
        batching = message.dynamic_batching
        batching.SetInParent()
        batching.max_queue_delay_microseconds = candidate.queue_delay_us
        del batching.preferred_batch_size[:]
        batching.preferred_batch_size.extend(candidate.preferred)
    return write_config(path, message)
