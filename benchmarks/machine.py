"""How busy the machine under the benchmark was: the CPU time the hypervisor gave to other
guests ("steal") while a run measured, read from /proc/stat (Linux; None elsewhere).

On a shared virtual machine, steal is the load nobody inside the machine can see: with 40 %
steal the same model serves at half the rate it does on a quiet host, and every figure of the
run moves with it (ratios between variants much less, since their slices interleave).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

__all__ = ["CpuTimes", "cpu_times", "steal_percent"]

#: (steal jiffies, all jiffies) of the machine's CPUs
CpuTimes = Tuple[int, int]
_STAT = Path("/proc/stat")
#: the position of "steal" among the numbers of the "cpu" line of /proc/stat
_STEAL_FIELD = 7


def cpu_times(stat: Path = _STAT) -> Optional[CpuTimes]:
    """(steal, total) jiffies of all CPUs since boot; None where /proc/stat is not there."""
    try:
        first = stat.read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu" or len(first) <= _STEAL_FIELD + 1:
        return None
    numbers = [int(value) for value in first[1:]]
    # guest time is already counted in user time: the first 8 fields are the whole
    return numbers[_STEAL_FIELD], sum(numbers[: _STEAL_FIELD + 1])


def steal_percent(before: Optional[CpuTimes], after: Optional[CpuTimes]) -> Optional[float]:
    """The share of the machine's CPU time stolen between two :func:`cpu_times` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])
