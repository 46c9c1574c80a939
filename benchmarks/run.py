"""Benchmark tritonpy against hand-written ``TritonPythonModel``s (and optionally PyTriton),
side by side in ONE run, in a real tritonserver.

One run: builds a model repository in a temporary directory (raw, tritonpy and, for image
preprocessing and postprocessing, naive hand-written models per workload), starts one embedded
tritonserver, drives each model over gRPC with a closed-loop load generator at each
concurrency (warm-up, then a fixed window), samples the server's CPU time from /proc, then
prints one table, the in-process limit, and pass/fail lines for the targets.

    python benchmarks/run.py                         # every workload, c = 1, 4, 16
    python benchmarks/run.py --quick                 # smoke mode: a few seconds per cell
    python benchmarks/run.py --with-pytriton --json results.json
    python benchmarks/run.py --workloads add_sub,postprocess --concurrency 1,16 --duration 5
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO

import numpy as np

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.control import add_checked_models, add_control_models, noise_floor
from benchmarks.fresh import SERVER_ARGS, restart_stubs
from benchmarks.inprocess import run_inprocess
from benchmarks.loadgen import (
    HeldCaller,
    check_outputs,
    close_clients,
    sequence_clients,
    wait_model_ready,
)
from benchmarks.machine import cpu_times, steal_percent
from benchmarks.pooled import no_tax_passes, pooled_ratios, render_pooled
from benchmarks.report import (
    Cell,
    Target,
    evaluate_targets,
    render_inprocess,
    render_stream_table,
    render_table,
)
from benchmarks.sequence_cost import SequenceCost, render_sequence_costs, run_sequence_costs
from benchmarks.workloads import ALL_WORKLOADS, Workload, build_repository
from tritonpy.perf._cpu import server_seconds, window_sample
from tritonpy.perf._engine import Caller, LoadWindow, grpc_caller_factory, run_closed_loop
from tritonpy.perf._stream import stream_caller_factory

__all__ = ["Cell", "Target", "evaluate_targets", "main", "render_table"]

HERE = Path(__file__).resolve().parent
VARIANT_ORDER = ("raw", "control", "checked", "raw_malloc", "tritonpy", "naive", "pytriton")
#: settling time of every slice after a variant's first in a round (its channels stay open
#: and the model is warm; the closed loop refills after the other variants' slices)
SLICE_SETTLE_S = 0.1


# -- measurement ---------------------------------------------------------------------------


def open_clients(url: str, workload: Workload, model: str, concurrency: int) -> List[Caller]:
    """One variant's clients for a round: ``concurrency`` callers whose channels are opened
    once and kept for every slice of the round (a slice then needs no new connections and
    only a short settling time, so a round can take more, shorter slices). A sequence model's
    clients run sequences of ``workload.sequence_length`` requests with fresh correlation ids,
    kept open from one slice to the next; :func:`close_clients` ends them. A decoupled
    model's clients each hold a gRPC stream (one request in flight, the next sent when the
    previous one's final response arrived). Every client is a :class:`HeldCaller`, closed by
    :func:`close_clients` when the round is over."""
    if workload.sequence_length:
        return sequence_clients(
            url, model, workload.payloads, length=workload.sequence_length, concurrency=concurrency
        )
    if workload.stream_responses:
        make = stream_caller_factory(url, model, workload.payloads)
    else:
        make = grpc_caller_factory(url, model, workload.payloads)
    # held: the engine's finish() at each window's end would close a stream for good
    return [HeldCaller(make(index)) for index in range(concurrency)]


def measure_window(
    clients: Sequence[Caller], root_pid: int, warmup: float, duration: float
) -> LoadWindow:
    """One closed-loop window of ``clients``, with the server tree's CPU sampled at its ends."""
    return run_closed_loop(
        clients.__getitem__,
        concurrency=len(clients),
        warmup=warmup,
        duration=duration,
        sample=lambda: window_sample(root_pid),
    )


def figures_of(windows: Sequence[LoadWindow]) -> Dict[str, Any]:
    """One round's figures from its windows (one, or the slices of an interleaved round):
    completions, CPU and latencies of all of them together."""
    done = sum(w.completed for w in windows)
    seconds = sum(w.duration_s for w in windows)
    latencies = [ms for w in windows for ms in w.latencies_ms]
    firsts = [ms for w in windows for ms in w.first_ms]
    server = sum(server_seconds(w.samples) for w in windows)
    client = sum(w.samples.get("client", math.nan) for w in windows)
    errors = [w.first_error for w in windows if w.first_error]

    def percentile(q: float, values: Sequence[float] = latencies) -> float:
        return float(np.percentile(np.asarray(values), q)) if values else math.nan

    responses = sum(w.responses for w in windows)
    return {
        "throughput": done / seconds if seconds > 0 else 0.0,
        "p50_ms": percentile(50),
        "p99_ms": percentile(99),
        # a stream's figures (NaN for a model that answers once): responses per second and
        # the time from sending a request to its first response
        "responses_per_s": responses / seconds if seconds > 0 and firsts else math.nan,
        "first_p50_ms": percentile(50, firsts),
        "first_p99_ms": percentile(99, firsts),
        "server_cpu_ms": server * 1000.0 / max(done, 1),
        "client_cpu_ms": client * 1000.0 / max(done, 1),
        "completed": done,
        "errors": sum(w.errors for w in windows),
        "first_error": errors[0] if errors else "",
    }


def _median_cell(
    workload: str, variant: str, model: str, concurrency: int, rounds: List[Dict[str, Any]]
) -> Cell:
    def med(key: str) -> float:
        values = [r[key] for r in rounds if not math.isnan(r.get(key, math.nan))]
        return float(statistics.median(values)) if values else math.nan

    errors = [r["first_error"] for r in rounds if r["first_error"]]
    return Cell(
        workload=workload,
        variant=variant,
        model=model,
        concurrency=concurrency,
        throughput=med("throughput"),
        p50_ms=med("p50_ms"),
        p99_ms=med("p99_ms"),
        responses_per_s=med("responses_per_s"),
        first_p50_ms=med("first_p50_ms"),
        first_p99_ms=med("first_p99_ms"),
        server_cpu_ms=med("server_cpu_ms"),
        client_cpu_ms=med("client_cpu_ms"),
        completed=sum(int(r["completed"]) for r in rounds),
        errors=sum(int(r["errors"]) for r in rounds),
        first_error=errors[0] if errors else "",
        rounds=[{k: v for k, v in r.items() if k != "first_error"} for r in rounds],
    )


# -- PyTriton --------------------------------------------------------------------------------


class PyTritonUnavailable(RuntimeError):
    pass


@contextlib.contextmanager
def pytriton_server(workloads: Sequence[str], workdir: Path, say: Any) -> Iterator[Any]:
    """Start benchmarks/pytriton_serve.py in its own process group; yield (grpc url, pid)."""
    try:
        import pytriton  # noqa: F401
    except ImportError as exc:
        raise PyTritonUnavailable(
            f"--with-pytriton needs PyTriton (pip install nvidia-pytriton): {exc}"
        ) from None
    from tritonpy.server._ports import pick_free_ports

    http_port, grpc_port, metrics_port = pick_free_ports(3)
    env = dict(os.environ)
    # PyTriton's stub embeds libpython by soname: make it find this interpreter's, not a
    # system one of another patch release (whose stdlib would not match).
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (libdir, env.get("LD_LIBRARY_PATH", "")) if p
    )
    log_path = workdir / "pytriton.log"
    log: TextIO = open(log_path, "w")  # noqa: SIM115 - closed below
    command = [
        sys.executable,
        str(HERE / "pytriton_serve.py"),
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}",
        f"--workloads={','.join(workloads)}",
    ]
    proc = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    url = f"127.0.0.1:{grpc_port}"
    try:
        try:
            wait_model_ready(url, [f"{w}_pytriton" for w in workloads], timeout=240.0)
        except TimeoutError as exc:
            tail = log_path.read_text(errors="replace").splitlines()[-15:]
            raise PyTritonUnavailable(
                f"PyTriton did not serve the models ({exc}); its log ends with:\n  "
                + "\n  ".join(tail)
            ) from None
        if proc.poll() is not None:
            raise PyTritonUnavailable(f"PyTriton exited with {proc.returncode}; see {log_path}")
        yield url, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


# -- main ------------------------------------------------------------------------------------


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py",
        description="tritonpy vs hand-written TritonPythonModel (and PyTriton) in one run",
    )
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workloads",
        default=",".join(ALL_WORKLOADS),
        help=f"comma-separated, from {','.join(ALL_WORKLOADS)} (default: all)",
    )
    parser.add_argument("--concurrency", default="1,4,16", help="comma-separated (default 1,4,16)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds per cell (default 1)")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per cell (default 3)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds per cell, the median is reported (default 1)"
    )
    parser.add_argument(
        "--slices",
        type=int,
        default=8,
        help="each round measures the variants in this many alternating slices of "
        "duration/slices seconds (default 8; 1: one window per variant)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke mode: 0.2 s warm-up, 0.5 s per cell in one slice, c=1,4",
    )
    parser.add_argument("--with-pytriton", action="store_true", help="add PyTriton (@batch)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="add a copy of each raw model, measured like the others: the run's noise floor",
    )
    parser.add_argument(
        "--checked",
        action="store_true",
        help="add the hand-written model that makes tritonpy's checks (add_sub, sequence, "
        "stream): tritonpy / checked is the engine's cost beyond them",
    )
    parser.add_argument(
        "--fresh-stubs",
        action="store_true",
        help="reload every variant's model before each round, so that each round runs on new "
        "stub processes (the median is then over several placements; ~1.5 s per model a round)",
    )
    parser.add_argument("--no-inprocess", action="store_true", help="skip the in-process limit")
    parser.add_argument("--json", type=Path, help="write the results to this JSON file")
    parser.add_argument(
        "--keep-repository", type=Path, help="write the model repository here and keep it"
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run(_parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args`` (see :func:`add_arguments`); 0 when every
    target passed, 1 when one missed, 2 on a usage or setup error."""
    from tritonpy.server import TritonServer

    if args.quick:
        # two slices: the clients of a round must serve every slice, as in a full run
        args.warmup, args.duration, args.slices = 0.2, 0.5, 2
        if args.concurrency == "1,4,16":
            args.concurrency = "1,4"
    try:
        workload_names = [w for w in args.workloads.split(",") if w]
        concurrencies = [int(c) for c in args.concurrency.split(",") if c]
        unknown = sorted(set(workload_names) - set(ALL_WORKLOADS))
        if (
            unknown
            or not concurrencies
            or min(concurrencies) < 1
            or args.repeat < 1
            or args.slices < 1
        ):
            raise ValueError(
                f"unknown workloads {unknown}" if unknown else "bad --concurrency/--repeat/--slices"
            )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="tritonpy-bench-"))
    repo = args.keep_repository or workdir / "model_repository"
    repo.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        say(f"building the model repository in {repo} ...")
        workloads = build_repository(repo, workload_names, log=say)
        if args.control:
            add_control_models(repo, workloads)
        if args.checked:
            add_checked_models(repo, workloads)
        with contextlib.ExitStack() as stack:
            say("starting tritonserver ...")
            server = stack.enter_context(
                TritonServer(
                    repo,
                    startup_timeout=300.0,
                    log_file=workdir / "tritonserver.log",
                    # no healer thread in this process beside the load generator; with
                    # --fresh-stubs the reloads need explicit model control
                    heal=False,
                    extra_args=SERVER_ARGS if args.fresh_stubs else (),
                )
            )
            assert server.pid is not None
            say(f"tritonserver ready in {time.monotonic() - started:.0f} s (pid {server.pid})")
            endpoints: Dict[str, Any] = {"server": (server.grpc_url, server.pid)}
            restart = (
                functools.partial(restart_stubs, server.http_url, repo)
                if args.fresh_stubs
                else None
            )
            if args.with_pytriton:
                served = [w.name for w in workloads if w.pytriton]
                if served:
                    say("starting PyTriton ...")
                    try:
                        endpoints["pytriton"] = stack.enter_context(
                            pytriton_server(served, workdir, say)
                        )
                    except PyTritonUnavailable as exc:
                        say(f"error: --with-pytriton: {exc}")
                        return 2
                    for w in workloads:
                        if w.pytriton:
                            w.models["pytriton"] = f"{w.name}_pytriton"
            problems = check_outputs(workloads, lambda v: _endpoint(endpoints, v)[0])
            for problem in problems:
                say(f"WARNING: {problem}")
            measuring = cpu_times()
            cells = _measure_all(workloads, concurrencies, endpoints, args, say, restart)
            steal = steal_percent(measuring, cpu_times())
        inprocess = (
            []
            if args.no_inprocess
            else run_inprocess([w.name for w in workloads], seconds=0.5 if args.quick else 1.0)
        )
        costs = [] if args.no_inprocess else _sequence_costs(repo, workloads, args.quick)
    finally:
        if args.keep_repository is None:
            shutil.rmtree(workdir, ignore_errors=True)

    targets = evaluate_targets(cells)
    print()
    print(render_table(cells))
    streams = render_stream_table(cells)
    if streams:
        _print_section(
            "Streaming (decoupled) models: infer/s above counts requests, each of several\n"
            "responses; first = from sending a request to its first response, final = to "
            "its last:",
            streams.splitlines(),
        )
    if inprocess:
        print("\nIn-process limit (no server):")
        print(render_inprocess(inprocess))
    _print_section(
        "Per-request cost of a sequence's state (in process, no server, one core: each model's\n"
        "execute() on 16 sequences of 20 requests; benchmarks/sequence_cost.py):",
        render_sequence_costs(costs),
    )
    print("\nTargets:")
    for target in targets:
        print(f"  {'PASS' if target.passed else 'FAIL'}  {target.description}: {target.detail}")
    floor = noise_floor(cells)
    _print_section(
        "Noise floor (--control: a copy of raw measured like the others; a tritonpy ratio\n"
        "this close to 1 is not a measured difference):",
        floor,
    )
    _print_section(
        "No tax over the whole run (a workload's rounds at every concurrency: geometric\n"
        "mean of the per-round ratios, 95 % interval; a cell's target takes a median):",
        render_pooled(cells),
    )
    if steal is not None:
        print(
            f"\nCPU steal while measuring: {steal:.0f} % (CPU time the hypervisor gave to other "
            f"guests; every figure of the run moves with it)"
        )
    failed = sum(not t.passed for t in targets)
    elapsed = time.monotonic() - started
    print(
        f"\n{len(targets) - failed}/{len(targets)} targets passed; {elapsed:.0f} s; "
        f"{os.cpu_count()} CPUs. Differences under ~15% between runs are noise on a shared "
        f"machine: compare within one run."
    )
    if args.json:
        document = {
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "settings": {
                "workloads": [w.name for w in workloads],
                "concurrency": concurrencies,
                "warmup_s": args.warmup,
                "duration_s": args.duration,
                "repeat": args.repeat,
                "with_pytriton": bool(args.with_pytriton),
                "control": bool(args.control),
                "checked": bool(args.checked),
                "slices": args.slices,
                "fresh_stubs": bool(args.fresh_stubs),
            },
            "output_check_problems": problems,
            "cells": [asdict(c) for c in cells],
            "inprocess": [
                {"workload": r.workload, "name": r.name.strip(), "ms": r.ms_per_item}
                for r in inprocess
            ],
            "sequence_costs": [{**asdict(c), "name": c.name} for c in costs],
            "targets": [asdict(t) for t in targets],
            "noise_floor": floor,
            "pooled": [asdict(p) for p in pooled_ratios(cells)],
            "no_tax_passes": {
                variant: no_tax_passes(cells, variant)
                for variant in ("tritonpy", "control")
                if any(c.variant == variant for c in cells)
            },
            "steal_percent": steal,
            "elapsed_s": elapsed,
        }
        args.json.write_text(json.dumps(document, indent=2, default=str), encoding="utf-8")
        say(f"results written to {args.json}")
    return 1 if failed else 0


def _sequence_costs(repo: Path, workloads: Sequence[Workload], quick: bool) -> List[SequenceCost]:
    """The in-process cost of the sequence workload's state per request (none without it)."""
    for workload in workloads:
        if workload.sequence_length:
            return run_sequence_costs(repo, workload, seconds=0.3 if quick else 1.0)
    return []


def _print_section(heading: str, lines: Sequence[str]) -> None:
    """A blank line, ``heading`` and ``lines`` indented under it; nothing without lines."""
    if lines:
        print(f"\n{heading}")
        for line in lines:
            print(f"  {line}")


def _endpoint(endpoints: Dict[str, Any], variant: str) -> Any:
    return endpoints["pytriton" if variant == "pytriton" else "server"]


def _measure_all(
    workloads: Sequence[Workload],
    concurrencies: Sequence[int],
    endpoints: Dict[str, Any],
    args: argparse.Namespace,
    say: Any,
    restart: Optional[Callable[[List[str]], float]] = None,
) -> List[Cell]:
    """Every workload and concurrency measured in ``--repeat`` rounds; ``restart`` (for
    ``--fresh-stubs``) reloads the given models before each round and returns the seconds."""
    cells: List[Cell] = []
    for workload in workloads:
        variants = [v for v in VARIANT_ORDER if v in workload.models]
        for conc in concurrencies:
            rounds: Dict[str, List[Dict[str, Any]]] = {v: [] for v in variants}
            for index in range(args.repeat):
                if restart is not None:
                    served = [workload.models[v] for v in variants if v != "pytriton"]
                    # each round starts another variant's stubs first: the order the stubs
                    # are created in must not fall on one variant in every round
                    shift = index * len(served) // args.repeat
                    seconds = restart(served[shift:] + served[:shift])
                    say(f"  {workload.name:<17} new stubs: {len(served)} models, {seconds:.1f} s")
                # the rounds' first variants spread over the order (every variant first
                # once when there are as many rounds as variants)
                first = index * len(variants) // args.repeat
                for variant, figures in _measure_round(
                    workload, variants, conc, endpoints, args, first=first
                ).items():
                    rounds[variant].append(figures)
                    say(
                        f"  {workload.name:<17} {variant:<10} c={conc:<3} "
                        f"{figures['throughput']:9.1f} infer/s  "
                        f"{figures['server_cpu_ms']:.3f} ms CPU/inf"
                    )
            for variant in variants:
                cells.append(
                    _median_cell(
                        workload.name, variant, workload.models[variant], conc, rounds[variant]
                    )
                )
    return cells


def _measure_round(
    workload: Workload,
    variants: Sequence[str],
    conc: int,
    endpoints: Dict[str, Any],
    args: argparse.Namespace,
    first: int = 0,
) -> Dict[str, Dict[str, Any]]:
    """One round of every variant: each measured for ``--duration`` seconds, in ``--slices``
    slices that take turns (A B C C B A A B C ...), so that a change of the machine's speed in
    the middle of a round falls on every variant alike. The round starts with the variant
    of index ``first`` (B C A A C B ... for ``first=1`` of three variants): given each first
    variant in turn, the rounds put every variant in every place of the order, the middle one
    included.

    A slice's figures move by ~20 % on a shared 2-core machine whatever its length (0.25 to
    1 s measured alike): more slices per round, not longer ones, narrow a round's figure.
    Each variant's clients are opened once per round: its first slice warms the model up
    for ``--warmup`` seconds, the later ones settle for :data:`SLICE_SETTLE_S`."""
    slices = max(1, args.slices)
    windows: Dict[str, List[LoadWindow]] = {v: [] for v in variants}
    clients: Dict[str, List[Caller]] = {}
    shift = first % len(variants)
    order = list(variants[shift:]) + list(variants[:shift])
    try:
        for part in range(slices):
            for variant in order if part % 2 == 0 else order[::-1]:
                url, pid = _endpoint(endpoints, variant)
                warmup = min(args.warmup, SLICE_SETTLE_S) if variant in clients else args.warmup
                if variant not in clients:
                    clients[variant] = open_clients(url, workload, workload.models[variant], conc)
                windows[variant].append(
                    measure_window(clients[variant], pid, warmup, args.duration / slices)
                )
    finally:
        for opened in clients.values():
            close_clients(opened)  # sequences end, streams and channels close
    return {variant: figures_of(windows[variant]) for variant in order}


if __name__ == "__main__":
    sys.exit(main())
