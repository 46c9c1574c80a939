"""What each stub process costs per request under load: CPU (user and system), minor page
faults and context switches of every model's ``triton_python_backend_stub``, read from
``/proc/<pid>/stat`` and ``/proc/<pid>/status`` around a window of closed-loop gRPC load, per
variant of one workload (an ensemble's members each on their own line).

    python benchmarks/stub_load.py --workload ensemble --concurrency 4
    python benchmarks/stub_load.py --workload image_preprocess --concurrency 1 --requests 600

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
from typing import Any, Dict, List, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.loadgen import _stub
from benchmarks.workloads import ALL_WORKLOADS, Workload, build_repository

__all__ = ["COUNTERS", "StubFigures", "main", "measure"]

#: what is read per stub, as printed (per request); the CPU figures in microseconds
COUNTERS = ("user_us", "system_us", "minor_faults", "voluntary_switches", "forced_switches")


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

    def per_request(self, model: str, counter: str) -> float:
        return self.models[model][counter] / max(self.requests, 1)


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
            lines.append(
                f"  {model:<32} user {cells[0]:7.1f}  system {cells[1]:6.1f}  "
                f"faults {cells[2]:7.1f}  switches {cells[3]:5.2f} / {cells[4]:5.2f}"
            )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="ensemble", choices=ALL_WORKLOADS)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requests", type=int, default=2000, help="per variant and round")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    from tritonpy.server import TritonServer

    with tempfile.TemporaryDirectory(prefix="tritonpy-stub-load-") as scratch:
        repo = Path(scratch) / "repo"
        repo.mkdir()
        built = build_repository(repo, [args.workload], log=print)
        if not built:
            print(f"error: the {args.workload} workload could not be built", file=sys.stderr)
            return 2
        with TritonServer(repo, heal=False) as server:
            figures = measure(built[0], server, args.concurrency, args.requests, args.rounds)
    print(render(args.workload, args.concurrency, figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
