"""How often does killing a model's stub under load take the whole tritonserver down?

Release 24.10's Python backend locks interprocess mutexes that live in the shared memory it
shares with the stub. A stub killed while it holds one leaves the mutex owned by a dead process;
the server's next lock of it throws ``boost::interprocess::lock_exception``, nothing catches it
and the server aborts (upstream: triton-inference-server/server#8882, #5949). This script
measures the rate: it serves ``dbl`` (a batching tritonpy model) under concurrent load, kills
its stub with SIGKILL and SIGSEGV in turn, and counts the kills after which the server itself
died, with the first line of the log that says why. A fresh server is started every
``--kills-per-server`` kills (the healer's backoff starts after three deaths in a minute).

    python -m benchmarks.stub_kill_chaos --kills 60
    # kills 60, healed 58, server aborted 2 (3.3 %, 95 % interval 0.9-11.4 %)
    # abort causes: {'boost::interprocess::lock_exception': 2}
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import tritonclient.grpc as grpcclient

from tritonpy.server import TritonServer
from tritonpy.server._stubwatch import live_stubs

#: the model served as ``dbl`` (tests/integration/test_heal.py serves it too)
DBL_SOURCE = Path(__file__).resolve().parent / "workloads" / "models" / "double_tritonpy.py"


def write_dbl(repo: Path) -> None:
    """Write the ``dbl`` model (:data:`DBL_SOURCE`, its config left to auto-complete) into
    the model repository ``repo``."""
    (repo / "dbl" / "1").mkdir(parents=True)
    (repo / "dbl" / "config.pbtxt").write_text('name: "dbl"\nbackend: "python"\n')
    (repo / "dbl" / "1" / "model.py").write_text(DBL_SOURCE.read_text())


ABORT_SIGNS = ("boost::interprocess::lock_exception", "std::bad_alloc", "Segmentation fault")


def wilson(hits: int, n: int, z: float = 1.96) -> Tuple[float, float]:
    """The 95 % Wilson score interval of a rate of ``hits`` in ``n``."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


class Load:
    """Threads sending ``dbl`` requests; ``last_ok`` is the send time of the newest success."""

    def __init__(self, url: str, threads: int) -> None:
        self.url = url
        self.stop = threading.Event()
        self.last_ok_sent = 0.0
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for thread in self.threads:
            thread.start()

    def _run(self) -> None:
        client = grpcclient.InferenceServerClient(self.url)
        x = np.arange(4, dtype=np.float32)[None]
        while not self.stop.is_set():
            sent = time.monotonic()
            try:
                inp = grpcclient.InferInput("X", [1, 4], "FP32")
                inp.set_data_from_numpy(x)
                client.infer("dbl", [inp], client_timeout=15.0)
                with self._lock:
                    self.last_ok_sent = max(self.last_ok_sent, sent)
            except Exception:  # errors are expected around a kill; only recovery is measured
                time.sleep(0.01)
        client.close()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(20)


def abort_cause(log: str) -> str:
    for sign in ABORT_SIGNS:
        if sign in log:
            return sign
    return "other: " + (log.strip().splitlines() or ["(empty log)"])[-1][:120]


def one_server(repo: Path, kills: int, threads: int, out: List[Dict[str, object]]) -> None:
    server = TritonServer(repo, heal_report=lambda line: None).start()
    assert server.pid is not None
    load = Load(server.grpc_url, threads)
    try:
        time.sleep(1.0)
        for k in range(kills):
            sig = (signal.SIGKILL, signal.SIGSEGV)[k % 2]
            stubs = [s.pid for s in live_stubs(server.pid) if s.model == "dbl"]
            deadline = time.monotonic() + 10
            while len(stubs) != 1 and time.monotonic() < deadline:
                time.sleep(0.05)
                stubs = [s.pid for s in live_stubs(server.pid) if s.model == "dbl"]
            killed = time.monotonic()
            os.kill(stubs[0], sig)
            record: Dict[str, object] = {"signal": sig.name}
            while time.monotonic() - killed < 30:
                if not server.running:
                    record["aborted"] = abort_cause(server.log_tail(60))
                    break
                if load.last_ok_sent >= killed:
                    record["recovery_s"] = round(time.monotonic() - killed, 3)
                    break
                time.sleep(0.02)
            else:
                record["stuck"] = True
            out.append(record)
            print(json.dumps(record), flush=True)
            if "aborted" in record or "stuck" in record:
                return
            time.sleep(0.5)
    finally:
        load.finish()
        server.stop()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=60)
    parser.add_argument("--kills-per-server", type=int, default=3)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--json", type=Path, help="write every kill's record here")
    args = parser.parse_args(argv)
    records: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        write_dbl(repo)
        while len(records) < args.kills:
            left = min(args.kills_per_server, args.kills - len(records))
            one_server(repo, left, args.threads, records)
    aborted = [r for r in records if "aborted" in r]
    healed = [r for r in records if "recovery_s" in r]
    low, high = wilson(len(aborted), len(records))
    causes: Dict[str, int] = {}
    for r in aborted:
        causes[str(r["aborted"])] = causes.get(str(r["aborted"]), 0) + 1
    print(
        f"kills {len(records)}, healed {len(healed)}, server aborted {len(aborted)} "
        f"({100 * len(aborted) / len(records):.1f} %, 95 % interval "
        f"{100 * low:.1f}-{100 * high:.1f} %), stuck {sum('stuck' in r for r in records)}"
    )
    print(f"abort causes: {causes}")
    if healed:
        times = sorted(float(str(r["recovery_s"])) for r in healed)
        print(
            f"recovery of the healed: median {times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
