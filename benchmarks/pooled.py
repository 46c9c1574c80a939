"""The no-tax question asked of a whole run (or of several) instead of one cell at a time.

A cell's target ("tritonpy >= 0.97x raw's throughput, median of 3 rounds") is a coin toss on a
shared 2-core machine: one round's ratio moves by ~5-10 % here, so an identical copy of raw
(the ``--control``) misses such a line often. Three figures answer the question the targets
ask with the runs' own evidence:

- per workload, the geometric mean of every round's ratio to raw (all concurrencies; a round's
  slices of raw and of the variant interleave, so its ratio is paired) with a 95 % confidence
  interval over the rounds, for tritonpy and for the control;
- the same for tritonpy against the control, two models neither of which holds raw's name;
- the no-tax targets judged on the control exactly as on tritonpy: how many of them a model
  that differs from raw only by chance passes in this run.

``benchmarks/run.py`` prints them for its run; ``python benchmarks/pooled.py A.json B.json``
pools the rounds of several ``--json`` files (rounds pair only inside their run).

    >>> from benchmarks.report import Cell
    >>> cells = [Cell("text", v, "m", 1, 0, 0, 0, 0, 0, 0, 0,
    ...               rounds=[{"throughput": t, "server_cpu_ms": 1.0} for t in tps])
    ...          for v, tps in (("raw", [100, 100, 100]), ("tritonpy", [99, 101, 100]))]
    >>> [(p.variant, p.against, round(p.throughput.ratio, 3)) for p in pooled_ratios(cells)]
    [('tritonpy', 'raw', 1.0)]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.control import CHECKED, CONTROL
from benchmarks.report import CPU_MAX_FACTOR, THROUGHPUT_MIN, Cell, evaluate_targets
from benchmarks.workloads import ALL_WORKLOADS

__all__ = [
    "COMPARISONS",
    "Interval",
    "PooledRatio",
    "failed_rounds",
    "geometric_interval",
    "load_run",
    "main",
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
    # the first two terms of its expansion in 1/df: within 0.0001 from df = 31
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Interval:
    """A ratio between two variants: the geometric mean of ``n`` per-round ratios and its
    95 % interval (``low`` and ``high`` are NaN with fewer than two rounds)."""

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
    """One variant of one workload against another (raw, or the control) over every round."""

    workload: str
    variant: str
    against: str
    throughput: Interval
    server_cpu: Interval
    #: a decoupled model's median time to first response (lower is better), when measured
    first_response: Optional[Interval] = None


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


def _round_ratios(cell: Cell, base: Cell, key: str) -> List[float]:
    """Round i of ``cell`` over round i of ``base``: their slices took turns, so they pair.
    A pair in which either round had failed requests is left out (see :func:`failed_rounds`)."""
    ratios = []
    for mine, theirs in zip(cell.rounds, base.rounds):
        if mine.get("errors") or theirs.get("errors"):
            continue
        a, b = float(mine.get(key, math.nan)), float(theirs.get(key, math.nan))
        if a > 0 and b > 0:
            ratios.append(a / b)
    return ratios


#: what the pooled view compares: (variant, against), the variant's ratio to the other; with
#: ``--checked``, the engine's cost beyond its checks and the checks' own cost
COMPARISONS = (
    ("tritonpy", "raw"),
    (CONTROL, "raw"),
    ("tritonpy", CONTROL),
    ("tritonpy", CHECKED),
    (CHECKED, CONTROL),
)


def pooled_ratios(
    *runs: Sequence[Cell], comparisons: Sequence[Tuple[str, str]] = COMPARISONS
) -> List[PooledRatio]:
    """For each workload and each ``(variant, against)`` both measured: the variant's
    throughput and server CPU per inference over the other's, pooled over every round of
    every concurrency of every run (rounds pair only inside their run).

    ``tritonpy`` against ``control`` compares two models of which neither is raw: whatever
    favours the variant named raw in a run (a place in the order, its stubs) leaves it out."""
    ratios: Dict[Tuple[str, str, str], Tuple[List[float], List[float], List[float]]] = {}
    for cells in runs:
        by = {(c.workload, c.variant, c.concurrency): c for c in cells}
        for (workload, variant, conc), cell in by.items():
            for mine, against in comparisons:
                base = by.get((workload, against, conc))
                if variant != mine or base is None:
                    continue
                throughput, cpu, first = ratios.setdefault((workload, mine, against), ([], [], []))
                throughput += _round_ratios(cell, base, "throughput")
                cpu += _round_ratios(cell, base, "server_cpu_ms")
                first += _round_ratios(cell, base, "first_p50_ms")
    order = {name: i for i, name in enumerate(ALL_WORKLOADS)}
    pooled = []
    for (workload, variant, against), (throughput, cpu, first) in sorted(
        ratios.items(),
        key=lambda item: (
            order.get(item[0][0], len(order)),
            comparisons.index(item[0][1:]),
        ),
    ):
        if throughput or cpu:
            pooled.append(
                PooledRatio(
                    workload,
                    variant,
                    against,
                    geometric_interval(throughput),
                    geometric_interval(cpu),
                    geometric_interval(first) if first else None,
                )
            )
    return pooled


def failed_rounds(cells: Sequence[Cell]) -> List[str]:
    """One line per cell with rounds in which requests failed: the pooled view leaves those
    rounds out, since their figures count failures (a closed stream answers at once)."""
    lines = []
    for cell in cells:
        failed = sum(1 for r in cell.rounds if r.get("errors"))
        if failed or cell.errors:
            lines.append(
                f"{cell.workload} {cell.variant} c={cell.concurrency}: {failed} of "
                f"{len(cell.rounds)} rounds had failed requests ({cell.errors}): "
                f"{cell.first_error[:80]}"
            )
    return lines


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


def render_pooled(*runs: Sequence[Cell]) -> List[str]:
    """The report's lines: the pooled ratios and, per run with a control, both pass counts."""
    pooled = pooled_ratios(*runs)
    if not pooled:
        return []
    lines = [f"{'workload':<17} {'variant':<21} {'rounds':>6}  {'throughput':<24} server CPU/inf"]
    for p in pooled:
        lines.append(
            f"{p.workload:<17} {p.variant + ' / ' + p.against:<21} {p.throughput.n:>6}  "
            f"{p.throughput!s:<24} {p.server_cpu}"
        )
    streams = [p for p in pooled if p.first_response is not None]
    if streams:
        lines.append("time to first response, p50 (decoupled models; below 1 is sooner):")
        for p in streams:
            lines.append(
                f"{p.workload:<17} {p.variant + ' / ' + p.against:<21} "
                f"{p.first_response.n if p.first_response else 0:>6}  {p.first_response}"
            )
    for index, cells in enumerate(runs):
        for failure in failed_rounds(cells):
            where = f" of run {index + 1}" if len(runs) > 1 else ""
            lines.append(f"LEFT OUT{where} (requests failed): {failure}")
    for index, cells in enumerate(runs):
        passed, total = no_tax_passes(cells)
        if not total:
            continue
        line = "no-tax targets passed" + (f" in run {index + 1}" if len(runs) > 1 else "")
        line += f": tritonpy {passed}/{total}"
        if any(c.variant == CONTROL for c in cells):
            c_passed, c_total = no_tax_passes(cells, CONTROL)
            line += f", the control judged by the same lines {c_passed}/{c_total}"
        lines.append(line)
    return lines


def load_run(path: Path) -> List[Cell]:
    """The cells of a ``benchmarks/run.py --json`` file."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return [Cell(**cell) for cell in document["cells"]]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="benchmarks/pooled.py",
        description="The no-tax view pooled over the rounds of one or more runs "
        "(benchmarks/run.py --json files; rounds pair inside their run).",
    )
    parser.add_argument("results", nargs="+", type=Path, help="benchmarks/run.py --json files")
    args = parser.parse_args(argv)
    runs = [load_run(path) for path in args.results]
    lines = render_pooled(*runs)
    print("\n".join(lines) if lines else "no rounds to pool (no raw, or no per-round figures)")
    # 1 when rounds were left out: the pooled figures then rest on fewer rounds than asked
    return 1 if any(failed_rounds(cells) for cells in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
