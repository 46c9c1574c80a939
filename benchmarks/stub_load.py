"""What each stub process costs per request under load: CPU (user and system), minor page
faults and context switches of every model's ``triton_python_backend_stub``, read from
``/proc/<pid>/stat`` and ``/proc/<pid>/status`` around a window of closed-loop gRPC load, per
variant of one workload (an ensemble's members each on their own line).

    python benchmarks/stub_load.py --workload ensemble --concurrency 4
    python benchmarks/stub_load.py --workload image_preprocess --concurrency 1 --requests 600

With ``--control`` each workload also gets an identical copy of its hand-written model (an
ensemble's members copied too, ``benchmarks/control.py``), measured like the others: how far
two copies of one model differ here, before a difference between raw and tritonpy is read as
a cost.

With ``--execute-cpu`` every model's ``execute()`` is also wrapped to add up its own thread
CPU time and the requests of each call (kept in a small memory-mapped file beside model.py),
so each stub line also says how much of its CPU per request ``execute()`` took, in calls of
one request and in merged calls: how issue 12's seventh pass found that the ensemble's tax was
inside ``execute()`` and in merged calls.

``stub_probe.py`` times ``execute()`` back to back with warm caches; this one measures the
stubs as the server runs them, with everything else competing. It is how the two large costs
of issue 12's sixth pass were found: the hand-written image model faulting ~1.7 MB of pages in
again on every request (``tune_malloc``), and torch's idle threads spinning in the ensemble's
MLP member (``torch_threads``). Variants take turns, the order reversed every round; Linux only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.control import add_control_models
from benchmarks.loadgen import _stub
from benchmarks.workloads import ALL_WORKLOADS, Workload, build_repository

__all__ = ["COUNTERS", "StubFigures", "main", "measure", "wrap_execute"]

#: what is read per stub, as printed (per request); the CPU figures in microseconds
COUNTERS = ("user_us", "system_us", "minor_faults", "voluntary_switches", "forced_switches")


#: appended to every model.py with --execute-cpu: execute() wrapped, its thread CPU time (ns)
#: and requests added up per kind of call, written into ``model.py.execute-cpu`` (mmap)
EXECUTE_CPU_WRAPPER = """

def _tritonpy_bench_wrap():  # added by benchmarks/stub_load.py --execute-cpu
    import mmap, os, struct, time
    path = __file__ + ".execute-cpu"
    with open(path, "wb") as out:
        out.write(bytes(32))
    handle = open(path, "r+b")
    memory = mmap.mmap(handle.fileno(), 32)
    totals = [0, 0, 0, 0]  # ns and requests in calls of one request, ns and requests merged
    original = TritonPythonModel.execute
    clock = time.thread_time_ns

    def execute(self, requests):
        started = clock()
        result = original(self, requests)
        spent = clock() - started
        slot = 0 if len(requests) == 1 else 2
        totals[slot] += spent
        totals[slot + 1] += len(requests)
        struct.pack_into("<4q", memory, 0, *totals)
        return result

    TritonPythonModel.execute = execute


_tritonpy_bench_wrap()
"""
#: what --execute-cpu adds to each stub's line (per request, us)
EXECUTE_COUNTERS = ("execute_us", "single_us", "merged_us")


def wrap_execute(repository: Path) -> None:
    """Append :data:`EXECUTE_CPU_WRAPPER` to every model.py that defines TritonPythonModel."""
    for model_file in repository.glob("*/*/model.py"):
        text = model_file.read_text()
        if "TritonPythonModel" in text:
            model_file.write_text(text + EXECUTE_CPU_WRAPPER)


def read_execute_cpu(repository: Path, model: str) -> Optional[List[int]]:
    """(ns, requests) of calls of one request, then of merged calls, so far; None unwrapped."""
    import struct

    for path in repository.glob(f"{model}/*/model.py.execute-cpu"):
        return list(struct.unpack("<4q", path.read_bytes()[:32]))
    return None


def read_counters(pid: int) -> Dict[str, float]:
    """A process's CPU seconds (user, system), minor faults and context switches so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {
        "user_us": int(fields[11]) / tick * 1e6,
        "system_us": int(fields[12]) / tick * 1e6,
        "minor_faults": float(fields[7]),
        "voluntary_switches": float(status["voluntary_ctxt_switches"]),
        "forced_switches": float(status["nonvoluntary_ctxt_switches"]),
    }


@dataclass
class StubFigures:
    """One variant's totals over its windows: requests, seconds, and per model its counters."""

    requests: int = 0
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    models: Dict[str, Dict[str, float]] = field(default_factory=dict)
    #: per model, with --execute-cpu: execute() ns and requests, alone and merged
    execute: Dict[str, List[int]] = field(default_factory=dict)

    def per_request(self, model: str, counter: str) -> float:
        return self.models[model][counter] / max(self.requests, 1)

    def execute_us(self, model: str) -> Optional[Tuple[float, float, float]]:
        """execute() CPU per request in us: every call, calls of one request, merged calls."""
        totals = self.execute.get(model)
        if totals is None:
            return None
        single_ns, singles, merged_ns, merged = totals
        return (
            (single_ns + merged_ns) / max(singles + merged, 1) / 1e3,
            single_ns / max(singles, 1) / 1e3,
            merged_ns / max(merged, 1) / 1e3,
        )


def _members(grpc_url: str, model: str) -> List[str]:
    """The model itself, or an ensemble's composing models (nested ensembles followed)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(grpc_url)
    try:
        config = client.get_model_config(model, as_json=True)["config"]
    finally:
        client.close()
    steps = config.get("ensemble_scheduling", {}).get("step", [])
    if not steps:
        return [model]
    return [m for step in steps for m in _members(grpc_url, step["model_name"])]


def _send(channel: Any, request: Any, count: int) -> None:
    for _ in range(count):
        channel.ModelInfer(request, timeout=60)


def measure(
    workload: Workload,
    server: Any,
    concurrency: int,
    requests: int,
    rounds: int,
    repository: Optional[Path] = None,
) -> Dict[str, StubFigures]:
    """Drive each variant (PyTriton excluded) in turn; the figures of its stubs."""
    import psutil

    from tritonpy.perf._engine import grpc_request
    from tritonpy.server._stubwatch import live_stubs

    variants = [v for v in workload.models if v != "pytriton"]
    stubs = {stub.model: stub.pid for stub in live_stubs(server.pid)}
    members = {v: _members(server.grpc_url, workload.models[v]) for v in variants}
    channels = [_stub(server.grpc_url) for _ in range(concurrency)]
    payload = workload.payloads[0]
    figures = {v: StubFigures() for v in variants}
    per_thread = max(requests // concurrency, 1)
    for variant in variants:  # warm every stub up once
        for _ in range(10):
            channels[0].ModelInfer(grpc_request(workload.models[variant], payload), timeout=60)
    for index in range(rounds):
        order = variants if index % 2 == 0 else variants[::-1]
        for variant in order:
            request = grpc_request(workload.models[variant], payload)
            pids = {m: stubs[m] for m in members[variant]}
            before = {m: read_counters(pid) for m, pid in pids.items()}
            wrapped = {
                m: read_execute_cpu(repository, m) if repository is not None else None for m in pids
            }
            server_before = sum(psutil.Process(server.pid).cpu_times()[:2])
            start = time.perf_counter()
            with ThreadPoolExecutor(concurrency) as pool:
                list(pool.map(_send, channels, [request] * concurrency, [per_thread] * concurrency))
            total = figures[variant]
            total.seconds += time.perf_counter() - start
            total.server_cpu_s += sum(psutil.Process(server.pid).cpu_times()[:2]) - server_before
            total.requests += per_thread * concurrency
            for model, pid in pids.items():
                after = read_counters(pid)
                sums = total.models.setdefault(model, dict.fromkeys(COUNTERS, 0.0))
                for counter in COUNTERS:
                    sums[counter] += after[counter] - before[model][counter]
                start_totals = wrapped[model]
                end_totals = read_execute_cpu(repository, model) if repository else None
                if start_totals is not None and end_totals is not None:
                    kept = total.execute.setdefault(model, [0, 0, 0, 0])
                    for slot in range(4):
                        kept[slot] += end_totals[slot] - start_totals[slot]
    return figures


def render(workload: str, concurrency: int, figures: Dict[str, StubFigures]) -> str:
    lines = [
        f"{workload}, c={concurrency}: per request, each stub (user and system CPU in us, "
        f"minor page faults, voluntary / forced context switches)"
    ]
    for variant, total in figures.items():
        rate = total.requests / max(total.seconds, 1e-9)
        server_us = total.server_cpu_s / max(total.requests, 1) * 1e6
        lines.append(
            f"{variant:<11} {rate:9.1f} infer/s   tritonserver {server_us:7.1f} us CPU/request"
        )
        for model in total.models:
            cells = [total.per_request(model, counter) for counter in COUNTERS]
            line = (
                f"  {model:<32} user {cells[0]:7.1f}  system {cells[1]:6.1f}  "
                f"faults {cells[2]:7.1f}  switches {cells[3]:5.2f} / {cells[4]:5.2f}"
            )
            execute = total.execute_us(model)
            if execute is not None:
                line += (
                    f"  execute {execute[0]:6.1f} (alone {execute[1]:6.1f}, "
                    f"merged {execute[2]:6.1f})"
                )
            lines.append(line)
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # its load sends plain requests, which a sequence model refuses: the sequence workload's
    # per-request cost is benchmarks/sequence_cost.py's
    plain = [name for name in ALL_WORKLOADS if name != "sequence"]
    parser.add_argument("--workload", default="ensemble", choices=plain)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requests", type=int, default=2000, help="per variant and round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--control",
        action="store_true",
        help="add an identical copy of the hand-written model: the measure's noise floor",
    )
    parser.add_argument(
        "--execute-cpu",
        action="store_true",
        help="also add up each model's execute() thread CPU (alone and merged calls)",
    )
    args = parser.parse_args(argv)
    from tritonpy.server import TritonServer

    with tempfile.TemporaryDirectory(prefix="tritonpy-stub-load-") as scratch:
        repo = Path(scratch) / "repo"
        repo.mkdir()
        built = build_repository(repo, [args.workload], log=print)
        if not built:
            print(f"error: the {args.workload} workload could not be built", file=sys.stderr)
            return 2
        if args.control:
            add_control_models(repo, built)
        if args.execute_cpu:
            wrap_execute(repo)
        with TritonServer(repo, heal=False) as server:
            figures = measure(
                built[0],
                server,
                args.concurrency,
                args.requests,
                args.rounds,
                repo if args.execute_cpu else None,
            )
    print(render(args.workload, args.concurrency, figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
