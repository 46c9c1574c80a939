"""``run_perf``: a closed-loop concurrency sweep of one served model, with server CPU and
Triton's statistics per point, by the built-in engine or perf_analyzer.

Example::

    options = PerfOptions(concurrency=(1, 4), duration=2.0)
    report = run_perf("image_preprocess", "localhost:8001", options)
    print(report.table())
"""

from __future__ import annotations

import base64
import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import ToolError
from .._tooling.options import changed
from .._tooling.processes import cpu_used, tree_cpu_snapshot
from ..client import InferClient, ModelKind, WireProtocol, model_kind
from ._cpu import server_pid
from ._engine import (
    Payload,
    Progress,
    describe_error,
    finish_caller,
    grpc_caller_factory,
    http_caller_factory,
    run_closed_loop,
)
from ._inputs import generate_payloads
from ._options import ENGINES, PerfOptions
from ._perf_analyzer import KindFlags, build_command, find_perf_analyzer, run_perf_analyzer
from ._refusals import http_refusal, refused_message
from ._report import Engine, PerfPoint, PerfReport, point_from_window
from ._sequences import SequenceIds, sequence_caller_factory
from ._stats import ModelStats
from ._stream import stream_caller_factory


def _statistics(client: InferClient, model: str) -> Optional[ModelStats]:
    try:
        raw: Any = client._client  # tritonclient's own client: the statistics call
        if client.endpoint.protocol == "grpc":
            reply = raw.get_inference_statistics(model, as_json=True)
        else:
            reply = raw.get_inference_statistics(model)
    except Exception:  # statistics are extra information: a server without them still runs
        return None
    return ModelStats.from_json(reply, model)


def perf_analyzer_input_data(
    payloads: Sequence[Mapping[str, NDArray[Any]]], *, batched: bool = True
) -> Dict[str, Any]:
    """Payloads in perf_analyzer's ``--input-data`` JSON form: per input ``content`` (numbers,
    or strings for BYTES; bytes that are not UTF-8 as ``{"b64": ...}``) and ``shape``
    without the batch dimension perf_analyzer adds itself (``batched``: the model batches;
    the payloads of a model that does not have no batch dimension to leave out)."""

    def tensor(array: NDArray[Any]) -> Dict[str, Any]:
        rows = array[0] if batched and array.ndim > 0 else array
        if array.dtype == np.object_:
            flat = rows.reshape(-1).tolist()
            try:
                return {"content": [v.decode("utf-8") for v in flat], "shape": list(rows.shape)}
            except UnicodeDecodeError:
                return {"b64": base64.b64encode(b"".join(flat)).decode("ascii")}
        return {"content": rows.reshape(-1).tolist(), "shape": list(rows.shape)}

    return {"data": [{name: tensor(a) for name, a in p.items()} for p in payloads]}


@dataclass(frozen=True)
class _Sweep:
    """What every point of one sweep shares: the client, the requests' factory, the chosen
    engine (with perf_analyzer's binary and input file), the server's pid."""

    client: InferClient
    model: str
    kind: ModelKind
    options: PerfOptions
    make: Callable[[int], Callable[[], None]]
    engine: Engine
    binary: Optional[str]
    data_file: Path
    pid: Optional[int]
    on_progress: Optional[Callable[[Progress], None]]


def run_perf(
    model: str,
    url: str = "localhost:8001",
    options: Optional[PerfOptions] = None,
    *,
    protocol: Optional[WireProtocol] = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
    **changes: Any,
) -> PerfReport:
    """Measure ``model`` at ``url`` at each concurrency of ``options`` (a
    :class:`PerfOptions`; keyword arguments replace its fields; see the module's docstring).
    Library code: nothing is printed; progress goes to ``on_progress``."""
    options = changed(PerfOptions, options, changes)
    client = InferClient(url, protocol, timeout=options.timeout)
    endpoint = client.endpoint
    try:
        config = client.model_config(model)
        kind = model_kind(config, client.model_config)
        if kind.decoupled and endpoint.protocol != "grpc":
            raise http_refusal(kind, url)
        payloads = generate_payloads(
            config, specs=options.specs, hints=options.hints, shapes=options.shapes
        )
        binary = find_perf_analyzer()
        engine = _choose_engine(options.engine, binary)
        pid = server_pid(endpoint.address, options.server_pid)
        report = PerfReport(model, url, endpoint.protocol, engine, options.duration,
                            mode=kind.mode, streamed=kind.decoupled)  # fmt: skip
        if kind.sequence:
            report.sequence_length = options.sequence_length
        if pid is None:
            report.notes.append(
                "server CPU not measured: the server is not local (pass --server-pid)"
            )
        make = _caller_factory(endpoint.protocol, endpoint.address, model, kind, payloads,
                               options)  # fmt: skip
        _first_request(make, kind, options)
        with tempfile.TemporaryDirectory(prefix="tritonpy-perf-") as scratch:
            data_file = Path(scratch) / "input_data.json"
            batched = int(config.get("max_batch_size", 0) or 0) > 0
            data_file.write_text(json.dumps(perf_analyzer_input_data(payloads, batched=batched)))
            sweep = _Sweep(client, model, kind, options, make, engine, binary, data_file, pid,
                           on_progress)  # fmt: skip
            report.points.extend(_measure(sweep, c) for c in options.concurrency)
        return report
    finally:
        client.close()


def _caller_factory(
    protocol: str,
    address: str,
    model: str,
    kind: ModelKind,
    payloads: Sequence[Payload],
    options: PerfOptions,
) -> Callable[[int], Callable[[], Any]]:
    """The workers' callers for the model's kind: plain requests, a stream per worker
    (decoupled), or sequences (streamed too for a decoupled sequence model)."""
    timeout = options.timeout
    if kind.sequence:
        start, end = options.sequence_id_range
        ids = SequenceIds(start, end, string=kind.uses_string_ids(options.sequence_ids))
        ids.check(max(options.concurrency, default=1))
        return sequence_caller_factory(
            address, protocol, model, payloads, length=options.sequence_length, ids=ids,
            streaming=kind.decoupled, timeout=timeout,
        )  # fmt: skip
    if kind.decoupled:
        return stream_caller_factory(address, model, payloads, timeout=timeout)
    factory = grpc_caller_factory if protocol == "grpc" else http_caller_factory
    return factory(address, model, payloads, timeout=timeout)


def _choose_engine(wanted: str, binary: Optional[str]) -> Engine:
    """perf_analyzer when asked for or (``auto``) when it is on PATH, else the built-in one."""
    if wanted not in ENGINES:
        raise ToolError(f"--engine {wanted!r}: expected one of {', '.join(ENGINES)}.")
    if wanted == "perf_analyzer" and binary is None:
        raise ToolError(
            "--engine perf_analyzer: perf_analyzer is not on PATH. Install it (Triton's "
            "SDK container, or a perf-analyzer wheel that ships the binary), or use "
            "--engine builtin."
        )
    return "perf_analyzer" if wanted != "builtin" and binary is not None else "builtin"


def _measure(sweep: _Sweep, concurrency: int) -> PerfPoint:
    """One point of the sweep, with the server's side (statistics, CPU) added."""
    before = _statistics(sweep.client, sweep.model)
    cpu_before = tree_cpu_snapshot(sweep.pid) if sweep.pid is not None else None
    options = sweep.options
    if sweep.engine == "perf_analyzer" and sweep.binary is not None:
        endpoint = sweep.client.endpoint
        csv_path = sweep.data_file.with_name(f"c{concurrency}.csv")
        command = build_command(
            sweep.binary, sweep.model, endpoint.address, endpoint.protocol, concurrency,
            duration=options.duration, csv_path=csv_path, input_data=sweep.data_file,
            shapes={k: list(v) for k, v in options.shapes.items()},
            kind=_kind_flags(sweep.kind, options),
        )  # fmt: skip
        found = run_perf_analyzer(command, csv_path, timeout=options.duration * 20 + 60)
        point = found[0] if found else _empty_point(concurrency)
    else:
        window = run_closed_loop(
            sweep.make,
            concurrency=concurrency,
            warmup=options.warmup,
            duration=options.duration,
            on_progress=sweep.on_progress,
        )
        point = point_from_window(window, mode=sweep.kind.mode)
    return _with_server_side(
        point, sweep.client, sweep.model, before, sweep.pid, cpu_before, sweep.engine
    )


def _empty_point(concurrency: int) -> PerfPoint:
    nan = float("nan")
    return PerfPoint(concurrency, 0.0, nan, nan, nan, nan, 0, 0, "perf_analyzer wrote no row")


def _kind_flags(kind: ModelKind, options: PerfOptions) -> KindFlags:
    """What perf_analyzer needs to know of the model's kind (its --streaming and sequence
    options)."""
    if not kind.sequence:
        return KindFlags(streaming=kind.decoupled)
    return KindFlags(
        streaming=kind.decoupled,
        sequence_length=options.sequence_length,
        sequence_id_range=options.sequence_id_range,
    )


def _first_request(
    make: Callable[[int], Callable[[], Any]], kind: ModelKind, options: PerfOptions
) -> None:
    """Send one request (a sequence model: a whole short sequence, START then END) before
    the sweep: a model that refuses the generated requests fails here, once, with the
    server's message and the reason (its kind, a missing input, the data), instead of as a
    window full of errors."""
    call = make(0)
    try:
        call()
    except Exception as exc:  # the model's or the transport's error, reported as one line
        message = refused_message(
            kind, describe_error(exc), sequence_length=options.sequence_length
        )
        raise ToolError(message) from exc
    finally:
        finish_caller(call)


def _with_server_side(
    point: PerfPoint,
    client: InferClient,
    model: str,
    before: Optional[ModelStats],
    pid: Optional[int],
    cpu_before: Optional[Dict[int, float]],
    engine: Engine,
) -> PerfPoint:
    """Add the server's CPU per inference and the statistics over the point. The statistics'
    inference count divides the CPU (it counts the warm-up too, as the CPU sample does)."""
    after = _statistics(client, model)
    delta = after - before if after is not None and before is not None else None
    cpu_ms = None
    if pid is not None and cpu_before is not None and delta and delta.inference_count > 0:
        cpu_ms = cpu_used(cpu_before, tree_cpu_snapshot(pid)) * 1000.0 / delta.inference_count
    if delta is None:
        return replace(point, cpu_ms=cpu_ms)
    return replace(
        point,
        cpu_ms=cpu_ms,
        queue_ms=delta.queue_ms
        if point.queue_ms is None or engine == "builtin"
        else point.queue_ms,
        compute_ms=delta.compute_ms
        if point.compute_ms is None or engine == "builtin"
        else point.compute_ms,
        avg_batch=delta.avg_batch,
        server_stats=delta.to_json(),
        completed=point.completed or delta.success_count,
        errors=point.errors or delta.fail_count,
    )
