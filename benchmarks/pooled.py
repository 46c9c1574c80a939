"""The no-tax question asked of a whole run instead of one cell at a time.

A cell's target ("tritonpy >= 0.97x raw's throughput, median of 3 rounds") is a coin toss on a
shared 2-core machine: one round's ratio moves by ~5 % here, so an identical copy of raw (the
``--control``) misses such a line as often as anything else. Two figures answer the question
the targets ask with the run's own evidence:

- per workload, the geometric mean of every round's ratio to raw (all concurrencies; a round's
  slices of raw and of the variant interleave, so its ratio is paired) with a 95 % confidence
  interval over the rounds: how large a tax the whole run allows;
- the no-tax targets judged on the control exactly as on tritonpy: how many of them a model
  that differs from raw only by chance passes in this run.

    >>> from benchmarks.report import Cell
    >>> cells = [Cell("text", v, "m", 1, 0, 0, 0, 0, 0, 0, 0,
    ...               rounds=[{"throughput": t, "server_cpu_ms": 1.0} for t in tps])
    ...          for v, tps in (("raw", [100, 100, 100]), ("tritonpy", [99, 101, 100]))]
    >>> [round(p.throughput.ratio, 3) for p in pooled_ratios(cells)]
    [1.0]
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Dict, List, Sequence, Tuple

from benchmarks.control import CONTROL
from benchmarks.report import CPU_MAX_FACTOR, THROUGHPUT_MIN, Cell, evaluate_targets

__all__ = [
    "Interval",
    "PooledRatio",
    "no_tax_passes",
    "pooled_ratios",
    "render_pooled",
]

#: Student's t, two-sided 95 %, for 1-30 degrees of freedom (beyond: a series in 1/df)
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z975 = 1.959964


def t_quantile_975(df: int) -> float:
    """The 97.5th percentile of Student's t with ``df`` degrees of freedom (two-sided 95 %)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher's first term: within 0.002 of the exact value from df = 31
    return _Z975 + (_Z975**3 + _Z975) / (4 * df)


@dataclass(frozen=True)
class Interval:
    """A ratio to raw: the geometric mean of ``n`` per-round ratios and its 95 % interval
    (``low`` and ``high`` are NaN with fewer than two rounds)."""

    ratio: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        if math.isnan(self.ratio):
            return "-"
        if math.isnan(self.low):
            return f"{self.ratio:.3f}x"
        return f"{self.ratio:.3f}x ({self.low:.3f}-{self.high:.3f})"


@dataclass(frozen=True)
class PooledRatio:
    """One variant of one workload against raw over every round of the run."""

    workload: str
    variant: str
    throughput: Interval
    server_cpu: Interval


def geometric_interval(ratios: Sequence[float]) -> Interval:
    """The geometric mean of ``ratios`` with a 95 % t interval, taken on their logarithms
    (a ratio of 0.9 and one of 1/0.9 weigh alike)."""
    logs = [math.log(r) for r in ratios if r > 0 and math.isfinite(r)]
    if not logs:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Interval(math.exp(mean), math.nan, math.nan, 1)
    half = t_quantile_975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


def _round_ratios(cell: Cell, raw: Cell, key: str) -> List[float]:
    """Round i of ``cell`` over round i of ``raw``: their slices took turns, so they pair."""
    ratios = []
    for mine, theirs in zip(cell.rounds, raw.rounds):
        a, b = float(mine.get(key, math.nan)), float(theirs.get(key, math.nan))
        if a > 0 and b > 0:
            ratios.append(a / b)
    return ratios


def pooled_ratios(
    cells: Sequence[Cell], variants: Sequence[str] = ("tritonpy", CONTROL)
) -> List[PooledRatio]:
    """For each workload with a raw model and each of ``variants``: its throughput and server
    CPU per inference against raw, pooled over every round of every concurrency."""
    by: Dict[Tuple[str, str, int], Cell] = {
        (c.workload, c.variant, c.concurrency): c for c in cells
    }
    workloads = list(dict.fromkeys(c.workload for c in cells))
    pooled = []
    for workload in workloads:
        for variant in variants:
            throughput: List[float] = []
            cpu: List[float] = []
            for (w, v, conc), cell in by.items():
                raw = by.get((w, "raw", conc))
                if w != workload or v != variant or raw is None:
                    continue
                throughput += _round_ratios(cell, raw, "throughput")
                cpu += _round_ratios(cell, raw, "server_cpu_ms")
            if throughput or cpu:
                pooled.append(
                    PooledRatio(
                        workload, variant, geometric_interval(throughput), geometric_interval(cpu)
                    )
                )
    return pooled


def _is_no_tax(description: str) -> bool:
    return description.endswith((f">= {THROUGHPUT_MIN}x raw", f"<= {CPU_MAX_FACTOR}x raw"))


def no_tax_passes(cells: Sequence[Cell], variant: str = "tritonpy") -> Tuple[int, int]:
    """How many of the no-tax targets (throughput and CPU per inference against raw, per
    cell) ``variant`` passes, judged by exactly the lines that judge tritonpy: ``(passed,
    total)``. With ``variant="control"`` it says how often a copy of raw passes them."""
    if variant != "tritonpy":
        cells = [
            replace(c, variant="tritonpy") if c.variant == variant else c
            for c in cells
            if c.variant != "tritonpy"
        ]
    targets = [t for t in evaluate_targets(cells) if _is_no_tax(t.description)]
    return sum(t.passed for t in targets), len(targets)


def render_pooled(cells: Sequence[Cell]) -> List[str]:
    """The report's lines: the pooled ratios and, with a control, both pass counts."""
    pooled = pooled_ratios(cells)
    if not pooled:
        return []
    lines = [f"{'workload':<17} {'variant':<10} {'rounds':>6}  {'throughput':<24} server CPU/inf"]
    for p in pooled:
        lines.append(
            f"{p.workload:<17} {p.variant:<10} {p.throughput.n:>6}  {p.throughput!s:<24} "
            f"{p.server_cpu}"
        )
    passed, total = no_tax_passes(cells)
    if total:
        line = f"no-tax targets passed: tritonpy {passed}/{total}"
        if any(c.variant == CONTROL for c in cells):
            c_passed, c_total = no_tax_passes(cells, CONTROL)
            line += f", the control judged by the same lines {c_passed}/{c_total}"
        lines.append(line)
    return lines
