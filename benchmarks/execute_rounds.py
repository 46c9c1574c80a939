"""The stub's ``execute()`` CPU per request, round by round, and a variant's difference from
raw's pooled over the rounds with an interval, so that one ``cpu_split.py --execute-cpu`` run
says how sure its ``execute()`` figures are.

Before, a run printed one total per variant, and the only interval was across runs (issue
32: ten runs of 2.5 minutes for one ±17 us). Every variant runs once per round, back to back
(``cpu_split.round_orders``), so a round of a variant pairs with raw's round of the same index;
resampling those pairs gives the interval, as ``cpu_split.pooled`` does for the server's CPU.
That interval is the rounds' noise only: each run starts its stubs afresh, and runs differ by
more than it (issue 32, three add_sub runs: tritonpy over the checked ablation +2.0, -0.9 and
+4.1 us, each +-2.2). With ``cpu_split.py --runs N`` each run's figure is printed and their
mean gets a 95 % interval over the runs.

A row is ``(ns, requests)``: the thread CPU of the variant's ``execute()`` calls in one round,
summed over its stubs, and the requests they served; None when a stub had no counter then.

    >>> rows = [(3_000_000, 100), (3_300_000, 100)]
    >>> raw = [(2_900_000, 100), (3_100_000, 100)]
    >>> [round(value, 1) for value in pooled_difference(rows, raw)]
    [1.5, 1.0, 2.0]
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Callable, List, Mapping, Optional, Sequence, Tuple, TypeVar

__all__ = [
    "Row",
    "across_runs",
    "paired_bootstrap",
    "pooled_difference",
    "render_differences",
    "round_row",
]

_Pair = TypeVar("_Pair")

#: one round of a variant: execute() thread ns and requests, or None (a stub not counted)
Row = Optional[Tuple[int, int]]


def round_row(deltas: Sequence[Optional[Sequence[int]]]) -> Row:
    """One round's row from the deltas of ``read_execute_cpu`` (ns and requests of calls of
    one request, then of merged calls) of each stub of the variant; None if one is missing."""
    ns = requests = 0
    for delta in deltas:
        if delta is None:
            return None
        ns += delta[0] + delta[2]
        requests += delta[1] + delta[3]
    return ns, requests


def _per_request_us(rows: Sequence[Tuple[int, int]]) -> float:
    requests = sum(row[1] for row in rows)
    return sum(row[0] for row in rows) / requests / 1e3 if requests else float("nan")


def paired_bootstrap(
    pairs: Sequence[_Pair],
    statistic: Callable[[Sequence[_Pair]], float],
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.90,
) -> Tuple[float, float, float]:
    """``statistic`` of the paired rounds and its ``level`` interval from resampling the
    pairs (a variant's round stays with the reference's round of the same index); nan
    without pairs. ``cpu_split.pooled`` and :func:`pooled_difference` both use it."""
    if not pairs:
        return (float("nan"),) * 3
    rng = random.Random(seed)
    draws = sorted(statistic(rng.choices(pairs, k=len(pairs))) for _ in range(resamples))
    tail = (1.0 - level) / 2
    low, high = draws[int(tail * resamples)], draws[int((1.0 - tail) * resamples) - 1]
    return statistic(pairs), low, high


def pooled_difference(
    mine: Sequence[Row],
    base: Sequence[Row],
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.90,
) -> Tuple[float, float, float]:
    """``mine``'s execute() us per request minus ``base``'s, each pooled over the rounds (all
    their ns and requests added up before dividing), and the ``level`` interval from resampling
    the rounds in pairs (round i of ``mine`` with round i of ``base``). Rounds where either
    side has no row are left out; nan without any."""
    pairs = _counted_pairs(mine, base)

    def difference(chosen: Sequence[Tuple[Tuple[int, int], Tuple[int, int]]]) -> float:
        return _per_request_us([a for a, _ in chosen]) - _per_request_us([b for _, b in chosen])

    return paired_bootstrap(pairs, difference, resamples, seed, level)


def _counted_pairs(
    mine: Sequence[Row], base: Sequence[Row]
) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
    """The rounds both sides counted (a row each, with requests)."""
    return [(a, b) for a, b in zip(mine, base) if a is not None and b is not None and a[1] and b[1]]


def across_runs(differences: Sequence[float]) -> Tuple[float, float, float]:
    """The mean of several runs' differences and its 95 % t interval (runs as the unit:
    each run starts its stubs afresh, and runs differ by more than one run's rounds say)."""
    from benchmarks.pooled import t_quantile_975

    values = [value for value in differences if not math.isnan(value)]
    if len(values) < 2:
        return (values[0] if values else float("nan"), float("nan"), float("nan"))
    mean = statistics.fmean(values)
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def render_differences(runs: Sequence[Mapping[str, Sequence[Row]]], base: str = "raw") -> List[str]:
    """The lines ``cpu_split.render`` prints: each variant's ``execute()`` us per request over
    ``base``'s, from one run with its 90 % interval over the paired rounds, or from several
    runs each run's figure and their mean with its 95 % interval over the runs. The control's
    line is the yardstick: an identical copy of raw, its interval is what noise alone allows."""
    runs = [run for run in runs if base in run]
    if not runs:
        return []
    variants = [variant for variant in runs[0] if variant != base]
    if len(runs) == 1:
        (rounds,) = runs
        lines = [f"execute() us per request over {base}'s, pooled over the rounds (90 % interval)"]
        for variant in variants:
            mid, low, high = pooled_difference(rounds[variant], rounds[base])
            counted = len(_counted_pairs(rounds[variant], rounds[base]))
            lines.append(
                f"  {variant:<11} {mid:+7.2f} us ({low:+.2f} to {high:+.2f}; {counted} rounds)"
            )
        return lines
    lines = [
        f"execute() us per request over {base}'s: each run's (pooled over its rounds), then "
        f"their mean (95 % interval over the {len(runs)} runs)"
    ]
    for variant in variants:
        each = [pooled_difference(run[variant], run[base])[0] for run in runs]
        mean, low, high = across_runs(each)
        lines.append(
            f"  {variant:<11} "
            + " ".join(f"{value:+6.2f}" for value in each)
            + f"  mean {mean:+6.2f} us ({low:+.2f} to {high:+.2f})"
        )
    return lines
