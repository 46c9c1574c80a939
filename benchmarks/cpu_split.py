"""Where a variant's server CPU per inference goes: tritonserver's own process (per thread
name) and each model's ``triton_python_backend_stub``, user and system time, voluntary and
forced context switches, minor page faults, per request, read from ``/proc`` around many short
windows of closed-loop gRPC load that the variants take in turns (raw, its identical copy
``control``, tritonpy; the order rotated every round and reversed every other one).

    python benchmarks/cpu_split.py --workload add_sub --concurrency 1 --rounds 30
    python benchmarks/cpu_split.py --workload ensemble --concurrency 4 --execute-cpu
    python benchmarks/cpu_split.py --workload sequence --concurrency 16 --execute-cpu
    python benchmarks/cpu_split.py --workload stream --concurrency 4 --requests 200 --execute-cpu
    python benchmarks/cpu_split.py --workload add_sub --concurrency 16 --execute-cpu \
        --extra checked=raw:benchmarks/workloads/models/add_sub_checked.py --against checked

``benchmarks/run.py`` gives the sum (server CPU per inference); this splits it, so a
difference between raw and tritonpy can be placed: in the stub's ``execute()`` (with
``--execute-cpu``: the thread CPU time of the ``execute`` the stub calls on the instance), in
the stub around it, or in tritonserver's process (the shared-memory messages, the response's
tensors). With ``--execute-cpu`` each variant's ``execute()`` is also given over raw's per
request, pooled over the rounds with a 90 % interval from the paired rounds
(``benchmarks/execute_rounds.py``: the control's line is what noise alone allows), and over each
variant ``--against`` names (an ablation: ``--against checked``). ``--gc`` counts each stub's
garbage collections; ``--extra VARIANT=LIKE:PATH`` adds an ablation (a model.py of your own,
served with the configuration of LIKE). CPU time is the
scheduler's (``/proc/<pid>/task/<tid>/schedstat``, nanoseconds): windows of a fraction of a
second are read exactly, where user and system time come in 10 ms ticks.

What it found on add_sub (issue 32; 2 cores shared, 36-40 rounds of 800-1,000 requests per
variant): tritonpy's extra server CPU per inference was all in the stub's ``execute()``, ~5 us
per request under load (36-38 against 31-33 us), where a warm loop shows 0.6 us; tritonserver's
own CPU, context switches, page faults (none), garbage collections (none in any variant) and
the stub's CPU outside ``execute()`` were the same as raw's within the control's spread, and
so were tritonpy's model with the hand-written ``execute()`` (``tune_malloc`` and all of
``initialize`` in place), with ``tune_malloc = False``, and the hand-written model importing
tritonpy. The plain-tensor path (``tritonpy/_runtime/_engine/_plain.py``) then took 0.8 / 1.6 us
of the ~4-5 us at c = 1 / 16. On the stream workload (a decoupled model: each thread holds a
gRPC stream per model) the extra is in the stub's ``execute()`` too, which sends all 16
responses of a request: see benchmarks/README.md, "Streams". Each figure is
printed with the control's ratio to raw beside tritonpy's, and with the spread of the
per-round ratios (rounds are paired: every variant runs once per round, back to back): a
tritonpy ratio inside the control's spread is not a measured difference. Linux only.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.execute_rounds import Row, paired_bootstrap, render_differences, round_row

__all__ = [
    "COUNTERS",
    "Totals",
    "main",
    "merge_runs",
    "parse_schedstat",
    "parse_stat",
    "parse_status",
    "pooled",
    "render",
    "round_orders",
]

#: what is read per process, as printed per request (CPU in microseconds)
COUNTERS = ("cpu_us", "user_us", "system_us", "voluntary", "forced", "minor_faults")
#: the name of tritonserver's own line
SERVER = "tritonserver"


#: appended to every model.py with --execute-cpu: the ``execute`` the stub calls on the
#: instance (a method, or what tritonpy binds on the instance at initialize) wrapped once the
#: instance is initialized, its thread CPU time (ns) and requests added up per kind of call
#: into ``model.py.execute-cpu`` (mmap; the layout of ``stub_load.py``'s wrapper, which wraps
#: the class's method instead and so keeps the frame of ``tp.Model.execute`` in the path)
EXECUTE_CPU_WRAPPER = """

def _tritonpy_bench_wrap():  # added by benchmarks/cpu_split.py --execute-cpu
    import mmap, struct, time
    path = __file__ + ".execute-cpu"
    with open(path, "wb") as out:
        out.write(bytes(32))
    handle = open(path, "r+b")
    memory = mmap.mmap(handle.fileno(), 32)
    totals = [0, 0, 0, 0]  # ns and requests in calls of one request, ns and requests merged
    original = getattr(TritonPythonModel, "initialize", lambda self, args: None)
    clock = time.thread_time_ns

    def initialize(self, args):
        done = original(self, args)
        inner = self.execute

        def execute(requests):
            started = clock()
            result = inner(requests)
            spent = clock() - started
            slot = 0 if len(requests) == 1 else 2
            totals[slot] += spent
            totals[slot + 1] += len(requests)
            struct.pack_into("<4q", memory, 0, *totals)
            return result

        self.execute = execute
        return done

    TritonPythonModel.initialize = initialize


_tritonpy_bench_wrap()
"""


def wrap_execute(repository: Path) -> None:
    """Append :data:`EXECUTE_CPU_WRAPPER` to every model.py that defines TritonPythonModel."""
    for model_file in repository.glob("*/*/model.py"):
        text = model_file.read_text(encoding="utf-8")
        if "TritonPythonModel" in text:
            model_file.write_text(text + EXECUTE_CPU_WRAPPER, encoding="utf-8")


#: appended to every model.py with --gc: the stub's garbage collections counted per
#: generation, with their thread CPU time, into ``model.py.gc`` (mmap: 3 counts, 3 ns totals)
GC_COUNTER = """

def _tritonpy_bench_gc():  # added by benchmarks/cpu_split.py --gc
    import gc, mmap, struct, time
    path = __file__ + ".gc"
    with open(path, "wb") as out:
        out.write(bytes(48))
    handle = open(path, "r+b")
    memory = mmap.mmap(handle.fileno(), 48)
    totals = [0] * 6
    clock = time.thread_time_ns
    started = [0]

    def count(phase, info):
        if phase == "start":
            started[0] = clock()
            return
        generation = info["generation"]
        totals[generation] += 1
        totals[3 + generation] += clock() - started[0]
        struct.pack_into("<6q", memory, 0, *totals)

    gc.callbacks.append(count)


_tritonpy_bench_gc()
"""


def add_gc_counter(repository: Path) -> None:
    """Append :data:`GC_COUNTER` to every model.py that defines TritonPythonModel."""
    for model_file in repository.glob("*/*/model.py"):
        text = model_file.read_text(encoding="utf-8")
        if "TritonPythonModel" in text:
            model_file.write_text(text + GC_COUNTER, encoding="utf-8")


def read_gc(repository: Path, model: str) -> Optional[List[int]]:
    """(collections of generation 0, 1, 2, then their ns) so far; None without --gc."""
    import struct

    for path in repository.glob(f"{model}/*/model.py.gc"):
        return list(struct.unpack("<6q", path.read_bytes()[:48]))
    return None


def parse_stat(text: str, tick: int) -> Tuple[float, float, float]:
    """(user us, system us, minor faults) from the text of ``/proc/<pid>[/task/<tid>]/stat``."""
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]) / tick * 1e6, int(fields[12]) / tick * 1e6, float(fields[7])


def parse_status(text: str) -> Tuple[float, float]:
    """(voluntary, forced) context switches from the text of ``/proc/<pid>/status``."""
    status = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return (
        float(status["voluntary_ctxt_switches"]),
        float(status["nonvoluntary_ctxt_switches"]),
    )


def parse_schedstat(text: str) -> float:
    """The CPU time in us (nanosecond resolution) from ``/proc/<pid>/task/<tid>/schedstat``."""
    return int(text.split()[0]) / 1e3


def read_process(pid: int, tick: int) -> Dict[str, float]:
    """A process's counters so far, all its threads together: ``cpu_us`` from the scheduler's
    nanosecond clock, user and system time in clock ticks (10 ms: read them over many
    windows), context switches and minor faults."""
    user, system, faults = parse_stat(Path(f"/proc/{pid}/stat").read_text(), tick)
    cpu = 0.0
    switches = [0.0, 0.0]
    # a process's own status counts its main thread's switches only: add up the threads'
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu += parse_schedstat((task / "schedstat").read_text())
            voluntary, forced = parse_status((task / "status").read_text())
        except (OSError, KeyError, ValueError):
            continue  # a thread that ended meanwhile
        switches[0] += voluntary
        switches[1] += forced
    return dict(zip(COUNTERS, (cpu, user, system, switches[0], switches[1], faults)))


def read_threads(pid: int) -> Dict[str, float]:
    """CPU us so far per thread name of a process (threads of one name added up)."""
    by_name: Dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            cpu = parse_schedstat((task / "schedstat").read_text())
        except (OSError, ValueError):
            continue
        by_name[name] = by_name.get(name, 0.0) + cpu
    return by_name


@dataclass
class Totals:
    """One variant's sums over its windows; ``rounds`` keeps each round's (requests, CPU us of
    tritonserver, CPU us of its stubs) for the paired spread."""

    requests: int = 0
    seconds: float = 0.0
    processes: Dict[str, Dict[str, float]] = field(default_factory=dict)
    threads: Dict[str, float] = field(default_factory=dict)
    rounds: List[Tuple[int, float, float]] = field(default_factory=list)
    #: per kind ("execute": execute() thread ns and requests alone and merged, with
    #: --execute-cpu; "gc": collections and their ns per generation, with --gc), per stub
    extra: Dict[str, Dict[str, List[int]]] = field(default_factory=dict)
    #: with --execute-cpu: each round's (execute() ns, requests) over the variant's stubs
    execute_rounds: List[Row] = field(default_factory=list)

    def per_request(self, process: str, counter: str) -> float:
        return self.processes.get(process, {}).get(counter, 0.0) / max(self.requests, 1)

    def cpu_us(self, process: str) -> float:
        return self.per_request(process, "cpu_us")

    def stubs(self) -> List[str]:
        return [name for name in self.processes if name != SERVER]


def round_orders(variants: Sequence[str], rounds: int) -> List[List[str]]:
    """Each round's order: starting one variant later every round, reversed every other
    round, so that every variant takes every place and follows every other."""
    orders = []
    count = len(variants)
    for index in range(rounds):
        start = index % count
        order = list(variants[start:]) + list(variants[:start])
        orders.append(order[::-1] if (index // count) % 2 else order)
    return orders


def pooled(
    mine: Sequence[Tuple[int, float, float]],
    raws: Sequence[Tuple[int, float, float]],
    part: int,
    resamples: int = 2000,
    seed: int = 0,
) -> Tuple[float, float, float]:
    """A variant's CPU per request over raw's, pooled over the rounds (all requests and CPU
    of each side added up), with a 90 % interval from resampling the rounds in pairs (a round
    of the variant stays with raw's round of the same index). ``part`` 1: tritonserver, 2: the
    stubs, 0: both. Rows are (requests, tritonserver us, stubs us)."""
    return paired_bootstrap(
        list(zip(mine, raws)), partial(cpu_ratio, part=part), resamples, seed, level=0.90
    )


RoundPair = Tuple[Tuple[int, float, float], Tuple[int, float, float]]


def cpu_ratio(pairs: Sequence[RoundPair], part: int) -> float:
    """The variant's CPU per request over raw's in ``pairs`` of rounds, all requests and CPU
    of each side added up before dividing (``part``: see :func:`pooled`)."""
    sums = [0.0, 0.0, 0.0, 0.0]
    for a, b in pairs:
        sums[0] += a[0]
        sums[1] += a[1] + a[2] if part == 0 else a[part]
        sums[2] += b[0]
        sums[3] += b[1] + b[2] if part == 0 else b[part]
    if sums[3] <= 0 or sums[0] <= 0:
        return float("nan")
    return (sums[1] / sums[0]) / (sums[3] / sums[2])


def merge_runs(runs: Sequence[Mapping[str, Totals]]) -> Dict[str, Totals]:
    """Several runs' totals as one run's: sums added, rounds one after the other (a round's
    pairs stay inside its run)."""
    merged: Dict[str, Totals] = {}
    for run in runs:
        for variant, total in run.items():
            into = merged.setdefault(variant, Totals())
            into.requests += total.requests
            into.seconds += total.seconds
            for name, counters in total.processes.items():
                sums = into.processes.setdefault(name, dict.fromkeys(counters, 0.0))
                for counter, value in counters.items():
                    sums[counter] = sums.get(counter, 0.0) + value
            for name, us in total.threads.items():
                into.threads[name] = into.threads.get(name, 0.0) + us
            for kind, per_model in total.extra.items():
                for model, row in per_model.items():
                    kept = into.extra.setdefault(kind, {}).setdefault(model, [0] * len(row))
                    for slot, value in enumerate(row):
                        kept[slot] += value
            into.rounds.extend(total.rounds)
            into.execute_rounds.extend(total.execute_rounds)
    return merged


def _ratios_over_runs(runs: Sequence[Mapping[str, Totals]]) -> List[str]:
    """Each variant's CPU per request over raw's from several runs: each run's server CPU
    ratio (pooled over its rounds), and per part the geometric mean of the runs' ratios with
    its 95 % interval over the runs (the runs are the unit, as for execute())."""
    from benchmarks.pooled import geometric_interval

    runs = [run for run in runs if "raw" in run]
    lines = [
        "CPU per request over raw's: each run's server CPU (pooled over its rounds), then per "
        f"part the geometric mean (95 % interval over the {len(runs)} runs)"
    ]
    for variant in runs[0] if runs else ():
        if variant == "raw":
            continue
        paired = [list(zip(run[variant].rounds, run["raw"].rounds)) for run in runs]
        by_part = {part: [cpu_ratio(pairs, part) for pairs in paired] for part in (0, 1, 2)}
        cells = [
            f"{label} {geometric_interval(by_part[part])}"
            for label, part in (("server CPU", 0), ("tritonserver", 1), ("stubs", 2))
        ]
        lines.append(
            f"  {variant:<9} "
            + " ".join(f"{ratio:.3f}" for ratio in by_part[0])
            + "  "
            + ", ".join(cells)
        )
    return lines


def render(
    totals: Mapping[str, Totals],
    workload: str,
    concurrency: int,
    against: Sequence[str] = (),
    runs: Sequence[Mapping[str, Totals]] = (),
) -> str:
    """The table: per variant its rate, per process its counters per request, then the
    ratios to raw with their per-round spread; with --execute-cpu, each variant's execute()
    over raw's and over each variant named in ``against`` (e.g. an ablation), per run and
    over the runs when ``runs`` holds several (``totals`` is then their merge)."""
    lines = [
        f"{workload}, c={concurrency}: per request (CPU in us; switches voluntary / forced; "
        f"minor faults)"
    ]
    for variant, total in totals.items():
        rate = total.requests / max(total.seconds, 1e-9)
        server = total.cpu_us(SERVER)
        stubs = sum(total.cpu_us(name) for name in total.stubs())
        lines.append(
            f"{variant:<9} {rate:8.1f} infer/s  server CPU {server + stubs:7.1f} us = "
            f"tritonserver {server:6.1f} + stubs {stubs:6.1f}  ({total.requests} requests)"
        )
        for name in total.processes:
            cells = [total.per_request(name, counter) for counter in COUNTERS]
            line = (
                f"  {name:<24} CPU {cells[0]:6.1f} (user {cells[1]:6.1f}  sys {cells[2]:5.1f})  "
                f"switches {cells[3]:5.2f} / {cells[4]:5.2f}  faults {cells[5]:5.2f}"
            )
            run = total.extra.get("execute", {}).get(name)
            if run is not None and run[1] + run[3]:
                line += f"  execute {(run[0] + run[2]) / (run[1] + run[3]) / 1e3:6.1f}"
            lines.append(line)
            collected = total.extra.get("gc", {}).get(name)
            if collected is not None:
                per = [value / max(total.requests, 1) for value in collected]
                lines.append(
                    f"    gc per 1000 requests: {per[0] * 1e3:.2f} / {per[1] * 1e3:.2f} / "
                    f"{per[2] * 1e3:.2f} collections (gen 0/1/2), "
                    f"{sum(per[3:]) / 1e3:.2f} us CPU per request"
                )
        threads = sorted(total.threads.items(), key=lambda item: -item[1])[:6]
        lines.append(
            "  tritonserver threads: "
            + ", ".join(f"{name} {us / max(total.requests, 1):.1f}" for name, us in threads)
        )
    if "raw" in totals and len(runs) > 1:
        lines.extend(_ratios_over_runs(runs))
    elif "raw" in totals:
        lines.append("CPU per request over raw's, pooled over the rounds (90 % interval)")
        for variant in totals:
            if variant == "raw":
                continue
            cells = []
            for label, part in (("server CPU", 0), ("tritonserver", 1), ("stubs", 2)):
                mid, low, high = pooled(totals[variant].rounds, totals["raw"].rounds, part)
                cells.append(f"{label} {mid:.3f}x ({low:.3f}-{high:.3f})")
            lines.append(f"  {variant:<9} " + ", ".join(cells))
    executes = [
        {variant: total.execute_rounds for variant, total in run.items()}
        for run in (runs if len(runs) > 1 else [totals])
    ]
    if any(rows for run in executes for rows in run.values()):
        for base in ("raw", *(name for name in against if name != "raw")):
            lines.extend(render_differences(executes, base))
    return "\n".join(lines)


class _Load:
    """``concurrency`` threads, each with its own channel, that send a window's requests on
    demand (kept across windows: no thread or channel is opened inside a window).

    With ``sequence_length`` (the sequence workload), each thread sends whole sequences of
    that many requests (START on the first, END on the last, a new id for each), so a
    window's requests per thread are rounded up to whole sequences."""

    def __init__(
        self, url: str, concurrency: int, sequence_length: int = 0, streams: Any = None
    ) -> None:
        from benchmarks.loadgen import _stub

        self.channels = [_stub(url) for _ in range(concurrency)]
        self.sequence_length = sequence_length
        #: a decoupled model's load: each thread's gRPC stream per model, opened by this
        #: ``f(model)`` on the thread's first window of that model and kept
        self.streams = streams
        self.request: Any = None
        self.count = 0
        self.start = threading.Barrier(concurrency + 1)
        self.done = threading.Barrier(concurrency + 1)
        self.stop = False
        self.errors: List[BaseException] = []
        self.threads = [
            threading.Thread(target=self._run, args=(channel, number), daemon=True)
            for number, channel in enumerate(self.channels)
        ]
        for thread in self.threads:
            thread.start()

    def _run(self, channel: Any, number: int) -> None:
        next_id = (number + 1) * 10_000_000  # each thread's sequence ids its own
        senders: Dict[str, Any] = {}
        while True:
            self.start.wait()
            if self.stop:
                for sender in senders.values():
                    sender.close()
                return
            try:
                if self.streams is not None:  # (the request is the model's name)
                    if self.request not in senders:
                        senders[self.request] = self.streams(self.request)
                    for _ in range(self.count):
                        senders[self.request].send(0)
                elif self.sequence_length:
                    next_id = self._sequences(channel, next_id)
                else:
                    for _ in range(self.count):
                        channel.ModelInfer(self.request, timeout=60)
            except Exception as exc:  # (a failed request must not leave the barrier waiting)
                self.errors.append(exc)
            self.done.wait()

    def _sequences(self, channel: Any, next_id: int) -> int:
        """Whole sequences of this window's request (at least ``count`` requests); the next
        free id."""
        from tritonpy.perf._stream import set_sequence

        length = self.sequence_length
        request = type(self.request)()
        request.CopyFrom(self.request)
        for _ in range(-(-self.count // length)):
            for position in range(length):
                set_sequence(request, (next_id, position == 0, position == length - 1))
                channel.ModelInfer(request, timeout=60)
            next_id += 1
        return next_id

    def sent(self, count: int) -> int:
        """Requests per thread a window of ``count`` sends."""
        length = self.sequence_length
        return -(-count // length) * length if length else count

    def window(self, request: Any, count: int) -> None:
        self.request, self.count = request, count
        self.start.wait()
        self.done.wait()
        if self.errors:
            raise RuntimeError(f"a request failed: {self.errors[0]}")

    def close(self) -> None:
        self.stop = True
        self.start.wait()
        for thread in self.threads:  # (each closes its streams on the way out)
            thread.join(timeout=10.0)


def _sample(server_pid: int, pids: Mapping[str, int], tick: int) -> Dict[str, Dict[str, float]]:
    sample = {SERVER: read_process(server_pid, tick)}
    for model, pid in pids.items():
        sample[model] = read_process(pid, tick)
    return sample


def measure(
    workload: Any,
    server: Any,
    concurrency: int,
    requests: int,
    rounds: int,
    readers: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Totals]:
    """Drive each variant in turn, ``rounds`` times; the totals of each. ``readers``: per
    kind of counter kept beside the stubs' model.py files, ``f(model)`` giving its totals so
    far (or None)."""
    from benchmarks.stub_load import _members
    from tritonpy.perf._engine import grpc_request
    from tritonpy.server._stubwatch import live_stubs

    tick = os.sysconf("SC_CLK_TCK")
    variants = [v for v in workload.models if v != "pytriton"]
    stubs = {stub.model: stub.pid for stub in live_stubs(server.pid)}
    members = {v: _members(server.grpc_url, workload.models[v]) for v in variants}
    payload = workload.payloads[0]
    streams = None
    if getattr(workload, "stream_responses", 0):  # a decoupled model: a stream per thread
        from tritonpy.perf._stream import StreamSender

        built: Dict[str, Any] = {v: workload.models[v] for v in variants}
        address = server.grpc_url

        def streams(model: str) -> Any:
            return StreamSender(address, model, [payload], timeout=60.0)

    else:
        built = {v: grpc_request(workload.models[v], payload) for v in variants}
    totals = {v: Totals() for v in variants}
    per_thread = max(requests // concurrency, 1)
    load = _Load(server.grpc_url, concurrency, workload.sequence_length, streams)
    per_thread = load.sent(per_thread)
    try:
        for variant in variants:  # warm every stub up
            load.window(built[variant], 20)
        for order in round_orders(variants, rounds):
            for variant in order:
                pids = {m: stubs[m] for m in members[variant]}
                kept = {(k, m): f(m) for k, f in (readers or {}).items() for m in pids}
                before = _sample(server.pid, pids, tick)
                threads = read_threads(server.pid)
                started = time.perf_counter()
                load.window(built[variant], per_thread)
                seconds = time.perf_counter() - started
                after = _sample(server.pid, pids, tick)
                _add(totals[variant], before, after, per_thread * concurrency, seconds)
                for name, us in read_threads(server.pid).items():
                    spent = us - threads.get(name, us)
                    totals[variant].threads[name] = totals[variant].threads.get(name, 0) + spent
                deltas: Dict[str, List[Optional[List[int]]]] = {}
                for (kind, model), start in kept.items():
                    end = (readers or {})[kind](model)
                    delta = None
                    if start is not None and end is not None:
                        delta = [value - start[slot] for slot, value in enumerate(end)]
                        sums = totals[variant].extra.setdefault(kind, {})
                        row = sums.setdefault(model, [0] * len(end))
                        for slot, value in enumerate(delta):
                            row[slot] += value
                    deltas.setdefault(kind, []).append(delta)
                if "execute" in deltas:
                    totals[variant].execute_rounds.append(round_row(deltas["execute"]))
    finally:
        load.close()
    return totals


def _add(
    total: Totals,
    before: Mapping[str, Mapping[str, float]],
    after: Mapping[str, Mapping[str, float]],
    requests: int,
    seconds: float,
) -> None:
    total.requests += requests
    total.seconds += seconds
    cpu = {SERVER: 0.0, "stubs": 0.0}
    for name, counters in after.items():
        sums = total.processes.setdefault(name, dict.fromkeys(COUNTERS, 0.0))
        for counter in COUNTERS:
            sums[counter] += counters[counter] - before[name][counter]
        used = counters["cpu_us"] - before[name]["cpu_us"]
        cpu[SERVER if name == SERVER else "stubs"] += used
    total.rounds.append((requests, cpu[SERVER], cpu["stubs"]))


def add_variant(repo: Path, workload: Any, spec: str) -> str:
    """Add ``VARIANT=LIKE:PATH`` to ``repo`` and ``workload``: PATH's model.py served with the
    configuration of the variant LIKE, as the model ``<workload>_<VARIANT>``."""
    import shutil

    variant, _, rest = spec.partition("=")
    like, _, path = rest.partition(":")
    if not variant or like not in workload.models or not Path(path).is_file():
        raise SystemExit(
            f"--extra {spec!r}: want VARIANT=LIKE:PATH, LIKE one of "
            f"{sorted(workload.models)} and PATH a model.py"
        )
    source, name = workload.models[like], f"{workload.name}_{variant}"
    (repo / name / "1").mkdir(parents=True)
    shutil.copyfile(path, repo / name / "1" / "model.py")
    config = (repo / source / "config.pbtxt").read_text(encoding="utf-8")
    (repo / name / "config.pbtxt").write_text(
        config.replace(f'name: "{source}"', f'name: "{name}"', 1), encoding="utf-8"
    )
    workload.models[variant] = name
    return name


def main(argv: Optional[Sequence[str]] = None) -> int:
    from benchmarks.workloads import ALL_WORKLOADS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="add_sub", choices=list(ALL_WORKLOADS))
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--requests", type=int, default=1000, help="per window")
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="start the server (and every stub) afresh this many times: the runs summed in the "
        "table, the CPU ratios and execute()'s differences given per run and over the runs",
    )
    parser.add_argument("--no-control", action="store_true", help="raw and tritonpy only")
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="VARIANT=LIKE:PATH",
        help="one more variant: the model.py at PATH with the configuration of variant LIKE "
        "(e.g. nomalloc=tritonpy:/tmp/add_sub_nomalloc.py; repeatable): an ablation",
    )
    parser.add_argument(
        "--execute-cpu", action="store_true", help="also each stub's execute() thread CPU"
    )
    parser.add_argument(
        "--gc", action="store_true", help="also each stub's garbage collections and their CPU"
    )
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="VARIANT",
        help="with --execute-cpu, also each variant's execute() over this one's, paired by "
        "round (e.g. --against checked; repeatable)",
    )
    args = parser.parse_args(argv)
    if args.against and not args.execute_cpu:
        parser.error("--against needs --execute-cpu")
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    from benchmarks.control import add_control_models
    from benchmarks.stub_load import read_execute_cpu
    from benchmarks.workloads import build_repository
    from tritonpy.server import TritonServer

    with tempfile.TemporaryDirectory(prefix="tritonpy-cpu-split-") as scratch:
        repo = Path(scratch) / "repo"
        repo.mkdir()
        built = build_repository(repo, [args.workload], log=print)
        if not built:
            print(f"error: the {args.workload} workload could not be built", file=sys.stderr)
            return 2
        workload = built[0]
        if not args.no_control:
            add_control_models(repo, built)
        workload.models = {v: m for v, m in workload.models.items() if v != "naive"}
        for extra in args.extra:
            add_variant(repo, workload, extra)
        unknown = [name for name in args.against if name not in workload.models]
        if unknown:
            print(
                f"error: --against {', '.join(unknown)}: not a variant of this run "
                f"({', '.join(sorted(workload.models))})",
                file=sys.stderr,
            )
            return 2
        readers: Dict[str, Any] = {}
        if args.execute_cpu:
            wrap_execute(repo)
            readers["execute"] = lambda model: read_execute_cpu(repo, model)
        if args.gc:
            add_gc_counter(repo)
            readers["gc"] = lambda model: read_gc(repo, model)
        runs: List[Dict[str, Totals]] = []
        for number in range(1, args.runs + 1):
            with TritonServer(repo, heal=False) as server:
                runs.append(
                    measure(workload, server, args.concurrency, args.requests, args.rounds, readers)
                )
            if args.runs > 1:
                print(f"run {number} of {args.runs} measured", file=sys.stderr, flush=True)
    print(render(merge_runs(runs), args.workload, args.concurrency, args.against, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
