"""The pure parts of the cold-start benchmark (``benchmarks/cold_start.py``): a stub's memory
read from ``/proc/<pid>/smaps_rollup``, the median of a variant's rounds with a distribution-free
95 % interval, each variant's ratio to raw paired by round, the verdict against the control,
and the printed lines.

A round measures every variant once, one after the other, so round i of a variant pairs with
round i of raw: their ratio is taken per round, and the geometric mean of those ratios gets a
95 % t interval (:func:`benchmarks.pooled.geometric_interval`). The control, an identical copy
of raw measured like the others, gives the interval a difference must leave to be more than
noise.

    >>> median_interval([3.0, 1.0, 2.0, 5.0, 4.0, 6.0])[:3]
    (3.5, 1.0, 6.0)
    >>> parse_smaps_rollup("Rss:  2048 kB\\nPss:  1024 kB\\n")
    {'rss_mb': 2.0, 'pss_mb': 1.0}
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from benchmarks.pooled import Interval, geometric_interval

__all__ = [
    "MEASURES",
    "UNITS",
    "Summary",
    "machine_jiffies",
    "median_interval",
    "other_cores",
    "parse_smaps_rollup",
    "render_summaries",
    "rotated",
    "summarize",
    "verdict",
]

#: the figures of one load, with their units
MEASURES: Tuple[Tuple[str, str], ...] = (
    ("load_s", "s"),
    ("first_ms", "ms"),
    ("rss_mb", "MB"),
    ("pss_mb", "MB"),
)
#: every figure's unit, in the order they are printed (a start's until READY, a serve's
#: until its 'serving' line)
UNITS: Dict[str, str] = {"load_s": "s", "ready_s": "s", "serving_s": "s", "first_ms": "ms",
                         "rss_mb": "MB", "pss_mb": "MB", "stubs_pss_mb": "MB"}  # fmt: skip
_SMAPS_FIELDS = {"Rss": "rss_mb", "Pss": "pss_mb"}


def parse_smaps_rollup(text: str) -> Dict[str, float]:
    """RSS and PSS in MB (of 1024 kB) from the text of ``/proc/<pid>/smaps_rollup``."""
    found: Dict[str, float] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        key = _SMAPS_FIELDS.get(name.strip())
        parts = rest.split()
        if key is not None and len(parts) == 2 and parts[1] == "kB":
            found[key] = int(parts[0]) / 1024.0
    return found


def machine_jiffies(stat_text: str) -> Tuple[int, int]:
    """(busy, all) jiffies of the machine's CPUs from the text of /proc/stat: busy leaves
    out idle, iowait and steal (the time the hypervisor gave to other guests)."""
    fields = [int(v) for v in stat_text.splitlines()[0].split()[1:9]]
    fields += [0] * (8 - len(fields))
    # user nice system idle iowait irq softirq steal
    return sum(fields[:3]) + fields[5] + fields[6], sum(fields)


def other_cores(busy_jiffies: int, own_cpu_s: float, wall_s: float, hz: int = 100) -> float:
    """How many cores other processes kept busy on average over ``wall_s`` seconds: the
    machine's busy CPU time less this benchmark's own (``own_cpu_s``: its process and its
    waited children, the servers and stubs among them)."""
    if wall_s <= 0:
        return math.nan
    return max(0.0, (busy_jiffies / hz - own_cpu_s) / wall_s)


def _binomial_below(n: int, k: int) -> float:
    """P(X < k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k)) / 2.0**n


def median_interval(values: Sequence[float]) -> Tuple[float, float, float, float]:
    """``(median, low, high, confidence)``: the median of ``values`` and the order-statistic
    interval around it (no assumption on the distribution) whose confidence is the largest
    not below 95 %, or the whole range and its confidence when fewer than 6 values cannot
    reach 95 % (5 values: 93.8 %). NaNs for no values."""
    data = sorted(v for v in values if not math.isnan(v))
    n = len(data)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    median = float(statistics.median(data))
    if n == 1:
        return median, median, median, 0.0
    k = 1  # the interval [x(k), x(n+1-k)], 1-based: confidence 1 - 2 P(X < k)
    while k + 1 <= n // 2 and 1 - 2 * _binomial_below(n, k + 1) >= 0.95:
        k += 1
    return median, data[k - 1], data[n - k], 1 - 2 * _binomial_below(n, k)


@dataclass(frozen=True)
class Summary:
    """One variant and one measure over the rounds: the median and its interval, the
    geometric mean of its per-round ratios to raw with a 95 % t interval, and the verdict."""

    variant: str
    measure: str
    median: float
    low: float
    high: float
    confidence: float
    ratio: Interval
    verdict: str


def verdict(ratio: Interval, control: Optional[Interval], *, is_control: bool = False) -> str:
    """What a ratio to raw allows one to say, judged against the control's interval: inside
    it the difference is noise; otherwise a measured difference in percent (or one that
    cannot be told from raw when its own interval reaches 1.0), flagged when the control's
    own interval leaves 1.0 (the run then favoured raw's or the copy's place)."""
    if is_control:
        return "the control: its interval is the noise"
    if math.isnan(ratio.ratio):
        return "-"
    if math.isnan(ratio.low) or control is None or math.isnan(control.low):
        return "too few rounds to tell noise from a difference"
    if control.low <= ratio.ratio <= control.high:
        return "noise (inside the control's interval)"
    if ratio.low <= 1.0 <= ratio.high:
        return "not told from raw (its interval reaches 1.0)"
    said = f"{(ratio.ratio - 1.0) * 100.0:+.0f} % against raw, outside the control's interval"
    if not control.low <= 1.0 <= control.high:  # two identical models differed: a bias
        said += " (but the control differs from raw too)"
    return said


def _ratios(mine: Sequence[float], raw: Sequence[float]) -> List[float]:
    return [a / b for a, b in zip(mine, raw) if a > 0 and b > 0]


def summarize(
    rounds: Mapping[str, Mapping[str, Sequence[float]]],
    measures: Sequence[str],
    *,
    base: str = "raw",
    control: str = "control",
) -> List[Summary]:
    """Per variant (in ``rounds``' order) and measure: the median with its interval and the
    per-round ratio to ``base`` with its verdict against ``control``. ``rounds[variant]
    [measure]`` holds one value per round; a NaN round is left out of that measure."""
    summaries = []
    for measure in measures:
        base_values = list(rounds.get(base, {}).get(measure, []))
        control_ratio: Optional[Interval] = None
        if control in rounds:
            control_ratio = geometric_interval(
                _ratios(rounds[control].get(measure, []), base_values)
            )
        for variant, figures in rounds.items():
            values = list(figures.get(measure, []))
            median, low, high, confidence = median_interval(values)
            ratio = geometric_interval(_ratios(values, base_values))
            if variant == base:
                text = "the reference"
            else:
                text = verdict(ratio, control_ratio, is_control=variant == control)
            summaries.append(Summary(variant, measure, median, low, high, confidence, ratio, text))
    return summaries


def _number(value: float, unit: str) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.2f}" if unit == "s" else f"{value:.1f}"


def render_summaries(
    summaries: Sequence[Summary], units: Mapping[str, str], *, variant_width: int = 17
) -> List[str]:
    """The printed table: per measure a heading, then per variant its median and interval,
    its ratio to raw with its 95 % interval, and the verdict."""
    lines: List[str] = []
    variant_width = max([variant_width, *(len(s.variant) for s in summaries)])
    controls = {s.measure: s.ratio for s in summaries if s.verdict.startswith("the control")}
    for measure in dict.fromkeys(s.measure for s in summaries):
        unit = units.get(measure, "")
        noise = f"; control / raw {controls[measure]}" if measure in controls else ""
        lines.append(f"{measure} ({unit}): median (interval), ratio to raw (95 % interval){noise}")
        for s in (s for s in summaries if s.measure == measure):
            interval = f"{_number(s.low, unit)}-{_number(s.high, unit)}"
            if not math.isnan(s.confidence) and s.confidence < 0.95:
                interval += f" {s.confidence * 100:.0f} %"
            ratio = "" if s.verdict == "the reference" else str(s.ratio)
            line = (
                f"  {s.variant:<{variant_width}} {_number(s.median, unit):>8} "
                f"{'(' + interval + ')':<19} {ratio:<24} {s.verdict}"
            )
            lines.append(line.rstrip())
    return lines


def rotated(variants: Sequence[str], index: int, rounds: int) -> List[str]:
    """Round ``index`` of ``rounds`` measures the variants starting with the one of index
    ``index * len(variants) // rounds``: over as many rounds as variants every variant takes
    every place of the order (what comes first in a round must not fall on one variant)."""
    if not variants:
        return []
    shift = (index * len(variants) // max(rounds, 1)) % len(variants)
    return list(variants[shift:]) + list(variants[:shift])
