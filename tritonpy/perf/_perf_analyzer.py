"""perf_analyzer (Triton's C++ load generator, from the SDK container or a ``perf-analyzer``
wheel) as the load engine: one run per concurrency, its CSV (``-f FILE``) read into the same
:class:`~tritonpy.perf.PerfPoint` as the built-in engine.

The CSV has a header line and one line per concurrency (perf_analyzer does not sort them);
times are in microseconds. Columns are found by name, so older files (a single ``Server
Compute`` column) and newer ones (``Server Compute Input/Infer/Output``, ``Avg latency``) both
read.

Example::

    points = parse_csv(Path("perf.csv").read_text())
    points[0].concurrency, points[0].throughput, points[0].p99_ms
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .._runtime.errors import ToolError
from ._report import PerfPoint


class PerfAnalyzerError(ToolError):
    """perf_analyzer failed, or its CSV could not be read."""


@dataclass(frozen=True)
class KindFlags:
    """The model's kind as perf_analyzer's options say it: ``streaming`` (a decoupled model:
    ``--streaming``, gRPC only), and for a sequence model ``sequence_length`` and
    ``sequence_id_range`` (start, end excluded or None)."""

    streaming: bool = False
    sequence_length: Optional[int] = None
    sequence_id_range: Tuple[int, Optional[int]] = (1, None)

    def options(self) -> List[str]:
        """perf_analyzer's flags: ``--streaming``; for sequences ``--sequence-length N``
        with ``--sequence-length-variation 0`` (every sequence N requests long, as the
        built-in engine sends them), ``--sequence-id-range``, and ``--serial-sequences``
        (one request of a sequence in flight at a time, as the built-in engine)."""
        found = ["--streaming"] if self.streaming else []
        if self.sequence_length is not None:
            start, end = self.sequence_id_range
            found += [
                "--sequence-length", str(self.sequence_length),
                "--sequence-length-variation", "0",
                "--sequence-id-range", f"{start}:{end}" if end is not None else str(start),
                "--serial-sequences",
            ]  # fmt: skip
        return found


def find_perf_analyzer() -> Optional[str]:
    """The path of ``perf_analyzer`` on PATH, or None."""
    return shutil.which("perf_analyzer")


def build_command(
    binary: str,
    model: str,
    address: str,
    protocol: str,
    concurrency: int,
    *,
    duration: float,
    csv_path: Path,
    input_data: Optional[Path] = None,
    shapes: Optional[Dict[str, Sequence[int]]] = None,
    kind: KindFlags = KindFlags(),
) -> List[str]:
    """perf_analyzer's command line for one concurrency: a time window of ``duration``
    seconds, the CSV written to ``csv_path``; ``input_data`` is a JSON file of its
    ``--input-data`` format (default: its own random data); ``kind``: the options of a
    decoupled or sequence model (see :class:`KindFlags`)."""
    window_ms = max(int(duration * 1000), 100)
    command = [
        binary,
        "-m", model,
        "-u", address,
        "-i", protocol,
        "--concurrency-range", f"{concurrency}:{concurrency}",
        "--measurement-mode", "time_windows",
        "--measurement-interval", str(window_ms),
        "--max-trials", "3",
        "-f", str(csv_path),
    ]  # fmt: skip
    if input_data is not None:
        command += ["--input-data", str(input_data)]
    for name, dims in (shapes or {}).items():
        command += ["--shape", f"{name}:{','.join(str(d) for d in dims)}"]
    return command + kind.options()


def _number(row: Dict[str, str], *names: str) -> Optional[float]:
    for name in names:
        text = (row.get(name) or "").strip()
        if text:
            try:
                return float(text)
            except ValueError as exc:
                raise PerfAnalyzerError(
                    f"perf_analyzer CSV: column {name!r} holds {text!r}, expected a number. "
                    "Is the file a perf_analyzer -f output?"
                ) from exc
    return None


def parse_csv(text: str) -> List[PerfPoint]:
    """The points of a perf_analyzer CSV, sorted by concurrency; microseconds become
    milliseconds. Raises :class:`PerfAnalyzerError` when a needed column is missing."""
    reader = csv.DictReader(io.StringIO(text.strip()))
    header = [h.strip() for h in reader.fieldnames or []]
    needed = ("Concurrency", "Inferences/Second", "p50 latency", "p90 latency", "p99 latency")
    absent = [name for name in needed if name not in header]
    if absent:
        raise PerfAnalyzerError(
            f"perf_analyzer CSV: missing column(s) {', '.join(map(repr, absent))}; found "
            f"{', '.join(header) or 'no header'}. Expected the file perf_analyzer writes with -f."
        )
    points = []
    for raw in reader:
        row = {(k or "").strip(): v for k, v in raw.items()}
        concurrency = _number(row, "Concurrency")
        if concurrency is None:
            continue
        queue_us = _number(row, "Server Queue")
        parts = [_number(row, f"Server Compute {p}") for p in ("Input", "Infer", "Output")]
        compute_us = (
            sum(p for p in parts if p is not None)
            if any(p is not None for p in parts)
            else _number(row, "Server Compute")
        )
        avg_us = _number(row, "Avg latency")
        if avg_us is None:
            pieces = [
                _number(row, name)
                for name in ("Client Send", "Network+Server Send/Recv", "Client Recv")
            ]
            known = [p for p in pieces if p is not None]
            avg_us = sum(known) if known else None
        points.append(
            PerfPoint(
                concurrency=int(concurrency),
                throughput=_number(row, "Inferences/Second") or 0.0,
                p50_ms=(_number(row, "p50 latency") or 0.0) / 1000.0,
                p90_ms=(_number(row, "p90 latency") or 0.0) / 1000.0,
                p99_ms=(_number(row, "p99 latency") or 0.0) / 1000.0,
                avg_ms=float("nan") if avg_us is None else avg_us / 1000.0,
                completed=0,
                errors=0,
                queue_ms=None if queue_us is None else queue_us / 1000.0,
                compute_ms=None if compute_us is None else compute_us / 1000.0,
                responses_per_s=_number(row, "Response Throughput"),
            )
        )
    return sorted(points, key=lambda p: p.concurrency)


def run_perf_analyzer(command: Sequence[str], csv_path: Path, timeout: float) -> List[PerfPoint]:
    """Run one perf_analyzer command and read its CSV."""
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PerfAnalyzerError(f"perf_analyzer ({command[0]}) did not finish: {exc}") from exc
    if done.returncode != 0 or not csv_path.is_file():
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-5:]
        raise PerfAnalyzerError(
            f"perf_analyzer exited with {done.returncode}: {' | '.join(tail) or 'no output'}. "
            "Run it by hand with the same options, or use --engine builtin."
        )
    return parse_csv(csv_path.read_text("utf-8"))
