"""Triton's per-model statistics (the statistics extension: HTTP
``/v2/models/<name>/stats``, gRPC ``ModelStatistics``) read before and after a measurement
window, and what the difference says: average queue and compute time per request, and the
average batch size the server formed (inferences / executions).

The JSON of both protocols is accepted; gRPC's JSON form writes int64 values as strings.

Example::

    before = ModelStats.from_json(client.get_inference_statistics("m"), "m")
    ...                                             # drive load
    delta = ModelStats.from_json(client.get_inference_statistics("m"), "m") - before
    delta.avg_batch, delta.queue_ms, delta.compute_ms
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Dict, Mapping, Optional

_DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class ModelStats:
    """Cumulative counters of one model (summed over its versions)."""

    inference_count: int = 0
    execution_count: int = 0
    success_count: int = 0
    fail_count: int = 0
    success_ns: int = 0
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0

    @classmethod
    def from_json(cls, reply: Mapping[str, Any], model: str) -> ModelStats:
        """Read the statistics reply ``reply`` (``{"model_stats": [...]}``) for ``model``;
        a reply without it gives zeros."""
        totals: Dict[str, int] = {f.name: 0 for f in fields(cls)}
        for entry in reply.get("model_stats") or []:
            if str(entry.get("name", "")) != model:
                continue
            totals["inference_count"] += _int(entry.get("inference_count"))
            totals["execution_count"] += _int(entry.get("execution_count"))
            stats = entry.get("inference_stats") or {}
            for key in _DURATIONS:
                part = stats.get(key) or {}
                if key in ("success", "fail"):
                    totals[f"{key}_count"] += _int(part.get("count"))
                totals[f"{key}_ns"] = totals.get(f"{key}_ns", 0) + _int(part.get("ns"))
        totals.pop("fail_ns", None)
        return cls(**totals)

    def __sub__(self, earlier: ModelStats) -> StatsDelta:
        values = {f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)}
        return StatsDelta(**values)


@dataclass(frozen=True)
class StatsDelta(ModelStats):
    """The counters' growth over a window, with the averages it gives."""

    @property
    def avg_batch(self) -> Optional[float]:
        """Inferences per model execution: the batch size the server formed (None when the
        model did not run)."""
        if self.execution_count <= 0:
            return None
        return self.inference_count / self.execution_count

    def _per_request_ms(self, ns: int) -> Optional[float]:
        return ns / self.success_count / 1e6 if self.success_count > 0 else None

    @property
    def queue_ms(self) -> Optional[float]:
        """Average time a request waited in the scheduler's queue."""
        return self._per_request_ms(self.queue_ns)

    @property
    def compute_ms(self) -> Optional[float]:
        """Average compute time per request: input + infer + output (the model's execute())."""
        return self._per_request_ms(
            self.compute_input_ns + self.compute_infer_ns + self.compute_output_ns
        )

    @property
    def request_ms(self) -> Optional[float]:
        """Average time from the request's arrival to its response, inside the server."""
        return self._per_request_ms(self.success_ns)

    def to_json(self) -> Dict[str, Any]:
        """Counters and averages, ready for ``json.dumps``."""
        data: Dict[str, Any] = asdict(self)
        data.update(
            avg_batch=self.avg_batch,
            queue_ms=self.queue_ms,
            compute_ms=self.compute_ms,
            request_ms=self.request_ms,
        )
        return data
