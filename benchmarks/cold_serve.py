"""The servers of the cold-start benchmark (``benchmarks/cold_start.py``): one tritonserver in
explicit model control whose models are unloaded and loaded through the repository API
(:class:`LoadedServer`), a new tritonserver per start (:func:`server_start`), a ``tritonpy
serve`` command per start (:func:`serve_start`), and a stub's memory and environment read
from ``/proc`` (:func:`stub_figures`).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from benchmarks.cold_report import parse_smaps_rollup

__all__ = ["LoadedServer", "serve_start", "server_start", "stub_figures"]

_POLL_S = 0.02
_TIMEOUT_S = 300.0


def _post(http_url: str, path: str, timeout: float = _TIMEOUT_S) -> None:
    request = urllib.request.Request(
        f"{http_url}{path}", data=b"{}", method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace")
        raise RuntimeError(f"POST {path}: HTTP {exc.code}: {body}") from None


def _is_ready(http_url: str, model: str) -> bool:
    try:
        with urllib.request.urlopen(f"{http_url}/v2/models/{model}/ready", timeout=5.0) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _wait(condition: Callable[[], bool], what: str, timeout: float = _TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout:.0f} s")
        time.sleep(_POLL_S)


def _stub_pids(server_pid: int, model: str) -> List[int]:
    from tritonpy.server._stubwatch import live_stubs

    return [s.pid for s in live_stubs(server_pid) if s.model == model]


def stub_figures(server_pid: int, model: str) -> Dict[str, Any]:
    """The memory of ``model``'s stub (one instance): RSS and PSS in MB from
    ``/proc/<pid>/smaps_rollup``, and the root of the environment it runs in
    (``TRITONPY_ENV_PREFIX``, which the environment's ``bin/activate`` exports; "" without
    one)."""
    pids = _stub_pids(server_pid, model)
    if len(pids) != 1:
        return {"rss_mb": math.nan, "pss_mb": math.nan, "env_root": ""}
    pid = pids[0]
    figures: Dict[str, Any] = parse_smaps_rollup(Path(f"/proc/{pid}/smaps_rollup").read_text())
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    prefix = [e.split(b"=", 1)[1] for e in environ if e.startswith(b"TRITONPY_ENV_PREFIX=")]
    figures["env_root"] = prefix[0].decode() if prefix else ""
    return figures


class LoadedServer:
    """A tritonserver on ``repo`` in explicit model control (every model loaded at the start,
    no healer) whose models are unloaded and loaded again one at a time."""

    def __init__(self, repo: Path, log_file: Path) -> None:
        from tritonpy.server import TritonServer

        # unpacked_envs=False: the environments as tritonserver alone serves them
        self.server = TritonServer(
            repo,
            reloadable=True,
            heal=False,
            unpacked_envs=False,
            startup_timeout=_TIMEOUT_S,
            log_file=log_file,
        )
        self.callers: Dict[str, Callable[[], Any]] = {}

    def __enter__(self) -> LoadedServer:
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()

    @property
    def pid(self) -> int:
        assert self.server.pid is not None
        return self.server.pid

    def warm(self, model: str, payloads: Sequence[Dict[str, Any]]) -> None:
        """Open ``model``'s gRPC channel and send it one request (untimed)."""
        from tritonpy.perf._engine import grpc_caller_factory

        self.callers[model] = grpc_caller_factory(self.server.grpc_url, model, payloads)(0)
        self.callers[model]()

    def unload(self, model: str) -> None:
        """Unload ``model`` and wait until it is not ready and its stub has ended."""
        url = self.server.http_url
        _post(url, f"/v2/repository/models/{model}/unload")
        _wait(
            lambda: not _is_ready(url, model) and not _stub_pids(self.pid, model),
            f"{model} still loaded",
        )

    def load(self, model: str) -> float:
        """Load ``model``; the seconds from the request until it answers READY."""
        url = self.server.http_url
        started = time.monotonic()
        _post(url, f"/v2/repository/models/{model}/load")
        _wait(lambda: _is_ready(url, model), f"{model} not ready")
        return time.monotonic() - started

    def first_request_ms(self, model: str) -> float:
        """The latency of ``model``'s first request after a load, on its open channel."""
        started = time.perf_counter()
        self.callers[model]()
        return (time.perf_counter() - started) * 1000.0


def server_start(
    repo: Path, log_file: Path, payloads: Sequence[Dict[str, Any]]
) -> Dict[str, float]:
    """Start a new tritonserver on ``repo`` as a container runs it (environment archives
    extracted by tritonserver): the seconds until every model is READY, the first request to
    its first model (ms) and the PSS of all its stubs together (MB: stubs running one
    environment's files share their pages); stopped afterwards."""
    from tritonpy.perf._engine import grpc_caller_factory
    from tritonpy.server import TritonServer

    server = TritonServer(
        repo, heal=False, unpacked_envs=False, startup_timeout=_TIMEOUT_S, log_file=log_file
    )
    started = time.monotonic()
    server.start()
    try:
        ready_s = time.monotonic() - started
        assert server.pid is not None
        stubs = [stub_figures(server.pid, name) for name in server.models_ready()]
        stubs_pss = sum(stub["pss_mb"] for stub in stubs)
        model = server.models_ready()[0]
        call = grpc_caller_factory(server.grpc_url, model, payloads)(0)
        began = time.perf_counter()
        call()
        first_ms = (time.perf_counter() - began) * 1000.0
    finally:
        server.stop()
    return {"ready_s": ready_s, "first_ms": first_ms, "stubs_pss_mb": stubs_pss}


def serve_start(
    repo: Path, *, extracting: bool = False, timeout: float = _TIMEOUT_S
) -> Dict[str, float]:
    """Run ``tritonpy serve REPO`` (free ports, quiet; ``extracting``: with
    ``--no-unpacked-envs``, tritonserver extracts the archives): the seconds from the command
    until it prints its ``serving`` line; then Ctrl-C and wait for it to end."""
    from tritonpy.server._ports import pick_free_ports

    ports = [str(p) for p in pick_free_ports(3)]
    command = [sys.executable, "-m", "tritonpy.cli", "serve", str(repo), "--quiet"]
    command += ["--no-unpacked-envs"] if extracting else []
    command += ["--http-port", ports[0], "--grpc-port", ports[1], "--metrics-port", ports[2]]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    lines: List[str] = []
    serving: Optional[float] = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("serving"):
                serving = time.monotonic() - started
                break
            if time.monotonic() - started > timeout:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    if serving is None:
        raise RuntimeError("tritonpy serve did not serve:\n" + "".join(lines[-20:]))
    return {"serving_s": serving}
