"""The benchmark's report: the cells it measured, the issue's targets evaluated on them, the
results table and the in-process limit table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from benchmarks.inprocess import InProcessResult
from benchmarks.workloads import ALL_WORKLOADS

__all__ = [
    "Cell",
    "Target",
    "evaluate_targets",
    "render_inprocess",
    "render_stream_table",
    "render_table",
]

# the targets of the issue
THROUGHPUT_MIN = 0.97
CPU_MAX_FACTOR = 1.03
NAIVE_MIN = 1.2
#: image_preprocess, where tritonpy decodes straight to the size: throughput over raw from c=4
IMAGE_MIN, IMAGE_MIN_FROM_CONCURRENCY = 1.3, 4
PYTRITON_MIN = {"add_sub": 3.0, "postprocess": 3.0, "image_preprocess": 1.3}


@dataclass
class Cell:
    """One measured (workload, variant, concurrency)."""

    workload: str
    variant: str
    model: str
    concurrency: int
    throughput: float
    p50_ms: float
    p99_ms: float
    server_cpu_ms: float  # server CPU per inference
    client_cpu_ms: float  # load generator CPU per inference
    completed: int
    errors: int
    first_error: str = ""
    rounds: List[Dict[str, float]] = field(default_factory=list)
    #: a decoupled model's responses per second and time to first response (medians of the
    #: rounds); NaN for a model that answers each request once
    responses_per_s: float = math.nan
    first_p50_ms: float = math.nan
    first_p99_ms: float = math.nan


@dataclass
class Target:
    description: str
    passed: bool
    detail: str


# -- report ----------------------------------------------------------------------------------


def _fmt(value: float, digits: int = 2) -> str:
    if math.isnan(value):
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def render_table(cells: Sequence[Cell]) -> str:
    """The results table: one row per cell; non-raw rows carry their ratio to raw."""
    raw = {(c.workload, c.concurrency): c for c in cells if c.variant == "raw"}
    header = (
        f"{'workload':<17} {'variant':<10} {'c':>3} {'infer/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'srv CPU ms/inf':>14} {'thr/raw':>8} {'cpu/raw':>8}"
    )
    lines = [header, "-" * len(header)]
    previous = None
    for cell in cells:
        if previous is not None and previous[0] != cell.workload:
            lines.append("")
        previous = (cell.workload, cell.concurrency)
        base = raw.get((cell.workload, cell.concurrency))
        thr_ratio = cpu_ratio = ""
        if base is not None and cell.variant != "raw":
            thr_ratio = _fmt(cell.throughput / base.throughput if base.throughput else math.nan)
            cpu_ratio = _fmt(
                cell.server_cpu_ms / base.server_cpu_ms if base.server_cpu_ms else math.nan
            )
        flag = f"  ({cell.errors} errors: {cell.first_error[:60]})" if cell.errors else ""
        lines.append(
            f"{cell.workload:<17} {cell.variant:<10} {cell.concurrency:>3} "
            f"{_fmt(cell.throughput, 1):>9} {_fmt(cell.p50_ms):>8} {_fmt(cell.p99_ms):>8} "
            f"{_fmt(cell.server_cpu_ms, 3):>14} {thr_ratio:>8} {cpu_ratio:>8}{flag}"
        )
    return "\n".join(lines)


def render_stream_table(cells: Sequence[Cell]) -> str:
    """The decoupled models' figures ("" without any): responses per second, the time to
    first response and to the final one (p50 and p99), and the ratios to raw of responses
    per second and of the first response's p50."""
    streams = [c for c in cells if not math.isnan(c.responses_per_s)]
    if not streams:
        return ""
    raw = {(c.workload, c.concurrency): c for c in streams if c.variant == "raw"}
    header = (
        f"{'workload':<17} {'variant':<10} {'c':>3} {'resp/s':>9} {'first p50':>9} "
        f"{'first p99':>9} {'final p50':>9} {'resp/raw':>8} {'first/raw':>9}"
    )
    lines = [header, "-" * len(header)]
    for cell in streams:
        base = raw.get((cell.workload, cell.concurrency))
        rate = first = ""
        if base is not None and cell.variant != "raw":
            rate = _fmt(cell.responses_per_s / base.responses_per_s)
            first = _fmt(cell.first_p50_ms / base.first_p50_ms)
        lines.append(
            f"{cell.workload:<17} {cell.variant:<10} {cell.concurrency:>3} "
            f"{_fmt(cell.responses_per_s, 1):>9} {_fmt(cell.first_p50_ms):>9} "
            f"{_fmt(cell.first_p99_ms):>9} {_fmt(cell.p50_ms):>9} {rate:>8} {first:>9}"
        )
    return "\n".join(lines)


def evaluate_targets(cells: Sequence[Cell]) -> List[Target]:
    """The issue's targets, one line per workload and concurrency; first, a failing line for
    each cell in which requests failed (its figures measure the failures, not the model)."""
    by = {(c.workload, c.variant, c.concurrency): c for c in cells}
    targets: List[Target] = [
        Target(
            f"{c.workload} c={c.concurrency} {c.variant}: every request answered",
            False,
            f"{c.errors} failed, its figures are not a measurement: {c.first_error[:100]}",
        )
        for c in cells
        if c.errors
    ]
    keys = sorted(
        {(c.workload, c.concurrency) for c in cells},
        key=lambda k: (ALL_WORKLOADS.index(k[0]) if k[0] in ALL_WORKLOADS else 99, k[1]),
    )
    for workload, conc in keys:
        tp, raw = by.get((workload, "tritonpy", conc)), by.get((workload, "raw", conc))
        if tp is None:
            continue
        where = f"{workload} c={conc}"
        if raw is not None:
            targets.append(_throughput_target(where, tp, raw, "raw", THROUGHPUT_MIN))
            limit = raw.server_cpu_ms * CPU_MAX_FACTOR
            targets.append(
                Target(
                    f"{where}: tritonpy server CPU/inf <= {CPU_MAX_FACTOR}x raw",
                    tp.server_cpu_ms <= limit,
                    f"{tp.server_cpu_ms:.3f} vs {raw.server_cpu_ms:.3f} ms (limit {limit:.3f})",
                )
            )
            if workload == "image_preprocess" and conc >= IMAGE_MIN_FROM_CONCURRENCY:
                targets.append(_throughput_target(where, tp, raw, "raw", IMAGE_MIN))
        naive = by.get((workload, "naive", conc))
        if naive is not None:
            targets.append(_throughput_target(where, tp, naive, "naive raw", NAIVE_MIN))
        pyt = by.get((workload, "pytriton", conc))
        if pyt is not None and workload in PYTRITON_MIN:
            need = PYTRITON_MIN[workload]
            ratio = tp.throughput / pyt.throughput if pyt.throughput else math.inf
            cpu = pyt.server_cpu_ms / tp.server_cpu_ms if tp.server_cpu_ms else math.nan
            targets.append(
                Target(
                    f"{where}: tritonpy throughput >= {need}x PyTriton",
                    ratio >= need,
                    f"{_fmt(tp.throughput, 1)} vs {_fmt(pyt.throughput, 1)} infer/s = "
                    f"{ratio:.2f}x (PyTriton uses {cpu:.1f}x the server CPU per inference)",
                )
            )
    return targets


def _throughput_target(
    where: str, tp: Cell, other: Cell, other_name: str, minimum: float
) -> Target:
    """tritonpy's throughput is at least ``minimum`` times ``other``'s."""
    ratio = tp.throughput / other.throughput if other.throughput else math.nan
    return Target(
        f"{where}: tritonpy throughput >= {minimum}x {other_name}",
        ratio >= minimum,
        f"{_fmt(tp.throughput, 1)} vs {_fmt(other.throughput, 1)} infer/s = {ratio:.2f}x",
    )


def render_inprocess(results: Sequence[InProcessResult]) -> str:
    lines = [f"{'workload':<17} {'work (one request, one core)':<42} {'ms':>8} {'per s':>9}"]
    for r in results:
        lines.append(
            f"{r.workload:<17} {r.name:<42} {r.ms_per_item:>8.3f} {_fmt(r.items_per_s, 0):>9}"
        )
    return "\n".join(lines)
