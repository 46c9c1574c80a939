"""The result of a load test: one :class:`PerfPoint` per concurrency, whichever engine
measured it (the built-in one or perf_analyzer), rendered as a table or JSON.

Example::

    report = PerfReport("add_sub", "localhost:8001", "grpc", "builtin", 2.0, [point])
    print(report.table())
    json.dump(report.to_json(), open("perf.json", "w"), indent=2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional, Sequence

from ..client import Mode, WireProtocol
from ._engine import LoadWindow
from ._stats import StatsDelta

#: the load engine that measured a report
Engine = Literal["builtin", "perf_analyzer"]


@dataclass(frozen=True)
class PerfPoint:
    """One concurrency's measurement. Latencies in milliseconds, client side (a streamed
    request's: from sending it to its final flag); ``cpu_ms``: server CPU milliseconds per
    inference (None when the server is not local); ``stats``: Triton's statistics over the
    window: average queue and compute milliseconds per request, average batch formed, and
    the raw counters (None when unavailable). Streaming adds ``responses_per_s`` and the time
    to first response (``first_p50_ms``...); sequences add ``sequences_per_s``."""

    concurrency: int
    throughput: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    avg_ms: float
    completed: int
    errors: int
    first_error: str = ""
    cpu_ms: Optional[float] = None
    queue_ms: Optional[float] = None
    compute_ms: Optional[float] = None
    avg_batch: Optional[float] = None
    server_stats: Optional[Dict[str, Any]] = None
    responses_per_s: Optional[float] = None
    first_p50_ms: Optional[float] = None
    first_p90_ms: Optional[float] = None
    first_p99_ms: Optional[float] = None
    sequences_per_s: Optional[float] = None

    @property
    def responses_per_request(self) -> Optional[float]:
        """Responses per completed request (a stream's length; None when not measured)."""
        if self.responses_per_s is None or not self.throughput > 0:
            return None
        return self.responses_per_s / self.throughput

    def to_json(self) -> Dict[str, Any]:
        """The point as JSON-ready data (NaN written as null)."""
        return {**self._common_json(), **self._kind_json()}

    def _kind_json(self) -> Dict[str, Any]:
        found = {
            "responses_per_s": self.responses_per_s,
            "responses_per_request": self.responses_per_request,
            "first_response_p50_ms": self.first_p50_ms,
            "first_response_p90_ms": self.first_p90_ms,
            "first_response_p99_ms": self.first_p99_ms,
            "sequences_per_s": self.sequences_per_s,
        }
        return {key: _clean(value) for key, value in found.items() if value is not None}

    def _common_json(self) -> Dict[str, Any]:
        clean = _clean
        return {
            "concurrency": self.concurrency,
            "throughput": clean(self.throughput),
            "p50_ms": clean(self.p50_ms),
            "p90_ms": clean(self.p90_ms),
            "p99_ms": clean(self.p99_ms),
            "avg_ms": clean(self.avg_ms),
            "completed": self.completed,
            "errors": self.errors,
            "first_error": self.first_error,
            "server_cpu_ms_per_infer": clean(self.cpu_ms),
            "queue_ms": clean(self.queue_ms),
            "compute_ms": clean(self.compute_ms),
            "avg_batch": clean(self.avg_batch),
            "server_stats": self.server_stats,
        }


def _clean(value: Optional[float]) -> Optional[float]:
    return None if value is None or math.isnan(value) else round(value, 4)


def point_from_window(
    window: LoadWindow,
    *,
    cpu_seconds: Optional[float] = None,
    stats: Optional[StatsDelta] = None,
    mode: Mode = "plain",
) -> PerfPoint:
    """Summarise one :class:`~tritonpy.perf._engine.LoadWindow`; ``cpu_seconds`` is the
    server's CPU over the window, divided here by the completed inferences. ``mode`` says
    which of the streaming and sequence figures the point carries."""
    latencies = window.latencies_ms
    cpu_ms = None
    if cpu_seconds is not None and window.completed > 0:
        cpu_ms = cpu_seconds * 1000.0 / window.completed
    return PerfPoint(
        concurrency=window.concurrency,
        throughput=window.throughput,
        p50_ms=window.percentile_ms(50),
        p90_ms=window.percentile_ms(90),
        p99_ms=window.percentile_ms(99),
        avg_ms=sum(latencies) / len(latencies) if latencies else float("nan"),
        completed=window.completed,
        errors=window.errors,
        first_error=window.first_error,
        cpu_ms=cpu_ms,
        queue_ms=None if stats is None else stats.queue_ms,
        compute_ms=None if stats is None else stats.compute_ms,
        avg_batch=None if stats is None else stats.avg_batch,
        server_stats=None if stats is None else stats.to_json(),
        **_kind_figures(window, mode),
    )


def _kind_figures(window: LoadWindow, mode: Mode) -> Dict[str, Any]:
    """The streaming figures (responses, time to first response) of a stream's window; the
    sequences per second of a sequence model's (streamed too when the window has them)."""
    found: Dict[str, Any] = {}
    if mode == "sequence":
        found["sequences_per_s"] = window.sequence_rate
    if mode == "streaming" or window.first_ms:
        found.update(
            responses_per_s=window.response_rate,
            first_p50_ms=window.first_percentile_ms(50),
            first_p90_ms=window.first_percentile_ms(90),
            first_p99_ms=window.first_percentile_ms(99),
        )
    return found


def _cell(value: Optional[float], digits: int = 2) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.{digits}f}"


_COLUMNS = (
    "conc", "infer/s", "p50 ms", "p90 ms", "p99 ms", "errors",
    "cpu ms/inf", "queue ms", "compute ms", "avg batch",
)  # fmt: skip
#: a decoupled model's table: requests and responses per second, time to first response,
#: latency to the final flag
_STREAM_COLUMNS = (
    "conc", "req/s", "resp/s", "resp/req", "first p50", "first p90", "first p99",
    "p50 ms", "p90 ms", "p99 ms", "errors", "cpu ms/inf", "queue ms", "compute ms",
    "avg batch",
)  # fmt: skip
#: what each mode says in the title
_MODE_TITLES = {
    "plain": "",
    "streaming": ", streaming: decoupled model over a gRPC stream per client",
    "sequence": ", sequences of {length} requests, concurrency = live sequences",
}


@dataclass
class PerfReport:
    """A whole sweep over one model."""

    model: str
    url: str
    protocol: WireProtocol
    #: the load engine that ran: tritonpy's own closed loop, or perf_analyzer when installed
    engine: Engine
    #: seconds measured at each concurrency (after the warm-up)
    duration_s: float
    #: one point per concurrency, in the order swept
    points: List[PerfPoint] = field(default_factory=list)
    #: what the report could not measure, and why (no local server CPU, no statistics...)
    notes: List[str] = field(default_factory=list)
    #: how the model was driven: plain requests, streams (decoupled) or sequences
    mode: Mode = "plain"
    #: requests per sequence (sequence mode)
    sequence_length: Optional[int] = None
    #: a sequence mode on a decoupled model: each request on a gRPC stream
    streamed: bool = False

    @property
    def streaming(self) -> bool:
        """Whether the requests went on gRPC streams (a decoupled model)."""
        return self.mode == "streaming" or self.streamed

    @property
    def columns(self) -> Sequence[str]:
        """The table's column names for the report's mode."""
        base = _STREAM_COLUMNS if self.streaming else _COLUMNS
        return ("seqs", "seq/s", *base[1:]) if self.mode == "sequence" else base

    def rows(self) -> List[List[str]]:
        """The table's rows as text cells, in the order of :attr:`columns`."""
        rows = []
        for p in self.points:
            latency = [_cell(p.p50_ms), _cell(p.p90_ms), _cell(p.p99_ms)]
            server = [str(p.errors), _cell(p.cpu_ms, 3), _cell(p.queue_ms, 3),
                      _cell(p.compute_ms, 3), _cell(p.avg_batch, 2)]  # fmt: skip
            row = [str(p.concurrency)]
            if self.mode == "sequence":
                row.append(_cell(p.sequences_per_s, 1))
            row.append(_cell(p.throughput, 1))
            if self.streaming:
                row += [_cell(p.responses_per_s, 1), _cell(p.responses_per_request, 2)]
                row += [_cell(p.first_p50_ms), _cell(p.first_p90_ms), _cell(p.first_p99_ms)]
            rows.append(row + latency + server)
        return rows

    def table(self) -> str:
        """A fixed-width text table, one line per concurrency, with a title line that says
        the mode (streams of a decoupled model, sequences)."""
        kind = _MODE_TITLES[self.mode].format(length=self.sequence_length)
        if self.streamed and self.mode == "sequence":
            kind += " (each on a gRPC stream: a decoupled model)"
        return render_table(
            f"{self.model} at {self.url} ({self.protocol}, engine {self.engine}, "
            f"{self.duration_s:g} s per point{kind})",
            self.columns,
            self.rows(),
            self.notes,
        )

    def to_json(self) -> Dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "model": self.model,
            "url": self.url,
            "protocol": self.protocol,
            "engine": self.engine,
            "duration_s": self.duration_s,
            "mode": self.mode,
            "sequence_length": self.sequence_length,
            "streamed": self.streaming,
            "points": [p.to_json() for p in self.points],
            "notes": list(self.notes),
        }

    def best(self) -> Optional[PerfPoint]:
        """The point with the highest throughput and no errors (None when all failed)."""
        clean = [p for p in self.points if p.errors == 0 and p.completed > 0]
        return max(clean, key=lambda p: p.throughput) if clean else None


def render_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str] = ()
) -> str:
    """Right-aligned columns under a title; ``notes`` follow as lines of their own."""
    widths = [len(c) for c in columns]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]
    lines = [title, "  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    lines += [f"note: {note}" for note in notes]
    return "\n".join(lines)
