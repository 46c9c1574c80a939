"""The configurations ``tritonpy tune`` measures: a :class:`Candidate` (instance count,
``max_batch_size``, dynamic batching's queue delay and preferred sizes, or the sequence
batcher's batches), the search space in the order measured, and a candidate applied to a
served configuration (its JSON form, as the load request's override).

Example::

    space = search_space(8, 2, default=candidate_of(config))
    override = apply_candidate(config, space[1])
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

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
    #: the sequence batcher forms the batches (a sequence model: no dynamic batching)
    sequence: bool = False

    @property
    def key(self) -> Tuple[int, int, int, Tuple[int, ...], bool]:
        """The settings, without the label: equal keys are the same configuration."""
        dynamic = self.dynamic and self.max_batch_size > 0
        return (self.instances, self.max_batch_size, self.queue_delay_us, self.preferred, dynamic)

    def describe(self) -> str:
        """``instances=2 max_batch=32 delay=1000us preferred=[8]`` (or the label)."""
        text = f"instances={self.instances}"
        if self.max_batch_size > 0 and self.sequence:
            text += f" max_batch={self.max_batch_size} (sequence batcher)"
        elif self.max_batch_size > 0 and not self.dynamic:
            text += f" max_batch={self.max_batch_size} no dynamic batching"
        elif self.max_batch_size > 0:
            text += f" max_batch={self.max_batch_size} delay={self.queue_delay_us}us"
            if self.preferred:
                text += f" preferred={list(self.preferred)}"
        return f"{self.label}: {text}" if self.label else text


def search_space(
    declared_max_batch: int,
    cores: int,
    *,
    default: Optional[Candidate] = None,
    sequence: bool = False,
) -> List[Candidate]:
    """The candidates in the order they are measured: ``default`` first, then the others by
    promise on CPU (more instances and a short queue delay first). No duplicates.
    ``sequence``: a sequence model, whose sequence batcher forms the batches: instance counts
    and max_batch_size only, no dynamic batching.

    Example::

        [c.describe() for c in search_space(8, 2)][:3]
    """
    found: List[Candidate] = [default] if default is not None else []
    instances = list(range(1, max(cores, 1) + 1))
    if declared_max_batch <= 0:
        found += [Candidate(n, 0) for n in reversed(instances)]
    elif sequence:
        sizes = [declared_max_batch]
        if declared_max_batch // 4 >= 2:
            sizes.append(declared_max_batch // 4)
        found += [
            Candidate(n, size, dynamic=False, sequence=True)
            for n in reversed(instances)
            for size in sizes
        ]
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
        "sequence_batching" in config,
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
        _fit_oldest(result, candidate.max_batch_size)
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


def _fit_oldest(config: Dict[str, Any], max_batch_size: int) -> None:
    """Keep the oldest strategy's preferred batch sizes within ``max_batch_size`` (the server
    fills them in from the declared maximum and refuses one above it)."""
    oldest = (config.get("sequence_batching") or {}).get("oldest")
    if isinstance(oldest, dict) and "preferred_batch_size" in oldest:
        sizes = [int(v) for v in oldest["preferred_batch_size"] if int(v) <= max_batch_size]
        oldest["preferred_batch_size"] = sizes
        if not sizes:
            del oldest["preferred_batch_size"]
