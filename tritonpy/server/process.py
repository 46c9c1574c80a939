"""``TritonServer``: launch a real tritonserver on a model repository, wait until every model is
ready, and stop it together with all of its stub processes."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Dict, List, Mapping, Optional, Sequence, Set, Type, Union

from .errors import ModelLoadError, ServerError, ServerTimeoutError
from .install import Installation, resolve_installation
from .logs import LogFollower, lines_about, read_tail
from .ports import pick_free_ports
from .procs import (
    group_processes,
    kill_group,
    remove_shm_regions,
    shm_regions,
    terminate_group,
    wait_group_gone,
)
from .readiness import ModelStatus, health_ready, repository_index

__all__ = ["TritonServer"]

PathLike = Union[str, "os.PathLike[str]"]

_POLL_S = 0.1
_PORT_ATTEMPTS = 3
_FAILURE_GRACE_S = 1.0
_LIVE: Set[TritonServer] = set()
_TEMP_DIRS: List[str] = []


def _stop_all_at_exit() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop(grace=5.0)
    for path in _TEMP_DIRS:
        shutil.rmtree(path, ignore_errors=True)


atexit.register(_stop_all_at_exit)


class _PortClash(Exception):
    pass


def _condensed(text: str, width: int = 300) -> str:
    """A log excerpt for an error message: no table borders, long lines cut, indented."""
    lines = [
        re.sub(r"\s{2,}", " ", ln.rstrip()) if ln.startswith("|") else ln
        for ln in text.splitlines()
        if not ln.startswith("+")
    ]
    return "\n".join("    " + (ln if len(ln) <= width else ln[: width - 3] + "...") for ln in lines)


class TritonServer:
    """A real tritonserver serving ``model_repository`` on loopback ports.

    By default it runs the tritonserver of the ``nvidia-pytriton`` wheel with a prepared Python
    backend directory holding the stub for ``python`` (default: this interpreter), on free
    ports. ``start()`` returns once the server and every model of the repository are READY; it
    raises :class:`ModelLoadError` (with the model's own error text and the log tail) when a
    model fails to load, and :class:`ServerTimeoutError` after ``startup_timeout`` seconds.
    ``stop()`` ends the server and every ``triton_python_backend_stub`` it started.

    ``env`` holds extra environment variables for the server (on top of ``os.environ``);
    ``extra_args`` are appended to the command line; the server's stdout/stderr go to
    ``log_file`` (a temporary file by default, removed when Python exits).

    Example::

        with TritonServer("model_repository") as server:
            client = tritonclient.http.InferenceServerClient(server.http_url[len("http://"):])
            print(server.models_ready())          # ['add_sub', 'preprocess']
    """

    def __init__(
        self,
        model_repository: PathLike,
        *,
        tritonserver: Optional[PathLike] = None,
        backend_directory: Optional[PathLike] = None,
        python: Optional[PathLike] = None,
        http_port: Optional[int] = None,
        grpc_port: Optional[int] = None,
        metrics_port: Optional[int] = None,
        host: str = "127.0.0.1",
        startup_timeout: float = 120.0,
        log_verbose: int = 0,
        extra_args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        log_file: Optional[PathLike] = None,
    ) -> None:
        self.model_repository = Path(model_repository).absolute()
        self.tritonserver = None if tritonserver is None else os.fspath(tritonserver)
        self.backend_directory = None if backend_directory is None else os.fspath(backend_directory)
        self.python = None if python is None else os.fspath(python)
        self.host = host
        self.startup_timeout = float(startup_timeout)
        self.log_verbose = int(log_verbose)
        self.extra_args = [str(a) for a in extra_args]
        self.env = dict(env or {})
        self._requested_ports = (http_port, grpc_port, metrics_port)
        self._ports: Optional[List[int]] = None
        self._log_file = None if log_file is None else Path(log_file)
        self._log_path: Optional[Path] = None
        self._log_start = 0
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._installation: Optional[Installation] = None
        self._lock = threading.RLock()
        self.returncode: Optional[int] = None
        self.command: List[str] = []

    # ----------------------------------------------------------------- addresses and state
    def _port(self, index: int) -> int:
        if self._ports is not None:
            return self._ports[index]
        requested = self._requested_ports[index]
        if requested is None:
            raise ServerError(
                "the server's ports are not known yet: they are picked by start(). Call "
                "start() (or enter the `with` block) first, or pass explicit ports."
            )
        return requested

    @property
    def _connect_host(self) -> str:
        if self.host in ("", "0.0.0.0"):
            return "127.0.0.1"
        if self.host == "::":
            return "[::1]"
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def http_port(self) -> int:
        return self._port(0)

    @property
    def grpc_port(self) -> int:
        return self._port(1)

    @property
    def metrics_port(self) -> int:
        return self._port(2)

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self._connect_host}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """``127.0.0.1:<port>`` (the form ``tritonclient.grpc`` expects)."""
        return f"{self._connect_host}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        """``http://127.0.0.1:<port>/metrics``."""
        return f"http://{self._connect_host}:{self.metrics_port}/metrics"

    @property
    def pid(self) -> Optional[int]:
        """The tritonserver process id (also its process group id), ``None`` when stopped."""
        return None if self._proc is None else self._proc.pid

    @property
    def log_path(self) -> Optional[Path]:
        """Where the server's output goes (known once started)."""
        return self._log_path

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the server's output (of the latest launch)."""
        if self._log_path is None:
            return ""
        return read_tail(self._log_path, n, start=self._log_start)

    def model_statuses(self) -> List[ModelStatus]:
        """Every model of the repository with its state (``POST /v2/repository/index``)."""
        try:
            return repository_index(self.http_url)
        except OSError as exc:
            raise ServerError(
                f"cannot read the repository index of the server at {self.http_url}: {exc}. "
                "Is the server running (server.running)?",
                log_tail=self.log_tail(),
            ) from exc

    def models_ready(self) -> List[str]:
        """Names of the models that are READY, sorted."""
        return sorted({m.name for m in self.model_statuses() if m.state == "READY"})

    def is_ready(self) -> bool:
        """``GET /v2/health/ready`` (strict: the server and all its models)."""
        return bool(health_ready(self.http_url))

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """Wait until the server process exits; return its exit code, or ``None`` when
        ``timeout`` passed first (or the server was never started)."""
        proc = self._proc
        if proc is None:
            return self.returncode
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    # ----------------------------------------------------------------------- start / stop
    def start(self) -> TritonServer:
        """Launch the server and wait until it and every model are ready.

        Raises :class:`ModelLoadError`, :class:`ServerTimeoutError` or :class:`ServerError`;
        the server is stopped before any of them propagates.
        """
        with self._lock:
            if self._proc is not None:
                raise ServerError(
                    f"this TritonServer is already running (pid {self._proc.pid}, "
                    f"{self.http_url}). Call stop() before starting it again."
                )
            if not self.model_repository.is_dir():
                raise ServerError(
                    f"model repository {str(self.model_repository)!r} is not a directory. "
                    "Pass the directory that holds one sub-directory per model."
                )
            if self._installation is None:
                merged = dict(os.environ)
                merged.update(self.env)
                self._installation = resolve_installation(
                    tritonserver=self.tritonserver,
                    backend_directory=self.backend_directory,
                    python=self.python,
                    env=merged,
                )
            self._prepare_log()
            for attempt in range(1, _PORT_ATTEMPTS + 1):
                self._choose_ports()
                self._launch(self._installation)
                try:
                    self._wait_until_ready()
                    return self
                except _PortClash as clash:
                    self._stop_quietly(_FAILURE_GRACE_S)
                    if not self._clash_is_ours(str(clash)) or attempt == _PORT_ATTEMPTS:
                        raise ServerError(
                            f"tritonserver could not bind its ports {self._ports} on "
                            f"{self.host}: {clash}. Pass other ports (http_port=, grpc_port=, "
                            "metrics_port=) or leave them None to pick free ones.",
                            log_tail=self.log_tail(),
                        ) from None
                except BaseException:
                    self._stop_quietly(_FAILURE_GRACE_S)
                    raise
            raise AssertionError("unreachable")

    def stop(self, grace: float = 10.0) -> None:
        """Stop the server: SIGINT (Triton unloads the models), after ``grace`` seconds
        SIGTERM to its whole process group, then SIGKILL. Returns once no process of the group
        (server or stub) is left. Idempotent.

        Raises :class:`ServerError` if some process of the group survives SIGKILL.
        """
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            try:
                self._end(proc, grace)
            except ServerError:
                self._forget(proc)
                raise
            # an interruption (KeyboardInterrupt) leaves the server known: stop() again
            self._forget(proc)

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = None
        self.returncode = proc.returncode
        _LIVE.discard(self)

    def __enter__(self) -> TritonServer:
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self._proc.pid}" if self._proc is not None else "stopped"
        return f"TritonServer({str(self.model_repository)!r}, {state})"

    # ----------------------------------------------------------------------- internals
    def _prepare_log(self) -> None:
        if self._log_path is not None:
            return
        if self._log_file is not None:
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log_path = self._log_file.absolute()
        else:
            tmp = tempfile.mkdtemp(prefix="tritonpy-server-")
            _TEMP_DIRS.append(tmp)
            self._log_path = Path(tmp) / "tritonserver.log"

    def _choose_ports(self) -> None:
        free = iter(pick_free_ports(3, self.host if self.host not in ("", "::") else "127.0.0.1"))
        self._ports = [p if p is not None else next(free) for p in self._requested_ports]

    def _clash_is_ours(self, message: str) -> bool:
        """Whether the port in a clash message was picked by us (then another pick helps)."""
        picked = {
            port
            for port, requested in zip(self._ports or [], self._requested_ports)
            if requested is None
        }
        match = re.search(r":(\d+)'", message)
        return match is not None and int(match.group(1)) in picked

    def _build_command(self, inst: Installation) -> List[str]:
        assert self._ports is not None
        http_port, grpc_port, metrics_port = self._ports
        return [
            str(inst.tritonserver),
            f"--model-repository={self.model_repository}",
            f"--backend-directory={inst.backend_directory}",
            f"--http-address={self.host}",
            f"--grpc-address={self.host}",
            f"--metrics-address={self.host}",
            f"--http-port={http_port}",
            f"--grpc-port={grpc_port}",
            f"--metrics-port={metrics_port}",
            "--exit-on-error=true",
            "--strict-readiness=true",
            f"--log-verbose={self.log_verbose}",
            *self.extra_args,
        ]

    def _launch(self, inst: Installation) -> None:
        assert self._log_path is not None
        self.command = self._build_command(inst)
        with open(self._log_path, "ab") as log:
            self._log_start = log.tell()
            try:
                self._proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=inst.env,
                    start_new_session=True,  # own process group: stubs are killed with it
                )
            except OSError as exc:
                raise ServerError(
                    f"cannot run tritonserver {str(inst.tritonserver)!r}: {exc}. Check the "
                    "path and that it is executable (tritonserver=...)."
                ) from exc
        _LIVE.add(self)

    def _wait_until_ready(self) -> None:
        proc = self._proc
        assert proc is not None and self._log_path is not None and self._ports is not None
        follower = LogFollower(self._log_path, self._log_start)
        http_suffix = f":{self._ports[0]}"
        deadline = time.monotonic() + self.startup_timeout
        statuses: List[ModelStatus] = []
        while True:
            returncode = proc.poll()
            follower.poll()
            if follower.failures:
                self._raise_load_error(follower)
            if follower.port_clash:
                raise _PortClash(follower.port_clash)
            if returncode is not None:
                raise ServerError(
                    f"tritonserver exited with code {returncode} before it was ready "
                    f"(repository {self.model_repository}). The log says why:\n"
                    f"{_condensed(self.log_tail(30))}",
                    log_tail=self.log_tail(),
                )
            if any(addr.endswith(http_suffix) for addr in follower.http_started):
                ready = health_ready(self.http_url, timeout=1.0)
                if ready is not None:
                    with contextlib.suppress(OSError, ValueError):
                        statuses = repository_index(self.http_url, timeout=2.0)
                unavailable = {m.name: m.reason for m in statuses if m.state == "UNAVAILABLE"}
                if unavailable:
                    follower.failures.update(unavailable)
                    self._raise_load_error(follower)
                if ready and statuses and all(m.state in ("READY", "") for m in statuses):
                    return
                if ready and not statuses and not self._expected_models():
                    return  # an empty repository
            if time.monotonic() >= deadline:
                self._raise_timeout(follower, statuses)
            time.sleep(_POLL_S)

    def _expected_models(self) -> List[str]:
        try:
            return sorted(
                p.name
                for p in self.model_repository.iterdir()
                if p.is_dir() and not p.name.startswith(".")
            )
        except OSError:
            return []

    def _raise_load_error(self, follower: LogFollower) -> None:
        self._stop_quietly(_FAILURE_GRACE_S)
        follower.poll()  # failures of other models logged meanwhile
        assert self._log_path is not None
        parts: List[str] = []
        failures: Dict[str, str] = dict(sorted(follower.failures.items()))
        for name, text in failures.items():
            parts.append(f"model {name!r} failed to load: {text.strip()}")
            about = lines_about(self._log_path, name, start=self._log_start)
            if about:
                parts.append(
                    f"  server log lines about {name!r}:\n{_condensed(chr(10).join(about))}"
                )
        names = ", ".join(repr(n) for n in failures)
        tail = self.log_tail(40)
        raise ModelLoadError(
            f"{len(failures)} model(s) of {self.model_repository} failed to load: {names}.\n"
            + "\n".join(parts)
            + "\nFix the model (its model.py or config.pbtxt) and start the server again. "
            f"Server log tail:\n{_condensed(tail)}",
            failures=failures,
            log_tail=tail,
        )

    def _raise_timeout(self, follower: LogFollower, statuses: List[ModelStatus]) -> None:
        if statuses:
            not_ready = sorted({m.name for m in statuses if m.state not in ("READY", "")})
        else:
            expected = set(self._expected_models()) | follower.loading
            not_ready = sorted(expected - follower.loaded)
        self._stop_quietly(_FAILURE_GRACE_S)
        tail = self.log_tail(40)
        what = ", ".join(repr(n) for n in not_ready) if not_ready else "(the server itself)"
        raise ServerTimeoutError(
            f"tritonserver did not become ready within {self.startup_timeout:g} s "
            f"(repository {self.model_repository}); not ready: {what}. A model whose "
            "initialize() is slow needs a longer startup_timeout (--timeout); a stub that never "
            "starts usually cannot find libpython (check LD_LIBRARY_PATH and the stub's Python "
            f"version). Server log tail:\n{_condensed(tail)}",
            not_ready=not_ready,
            log_tail=tail,
        )

    def _stop_quietly(self, grace: float) -> None:
        with contextlib.suppress(ServerError):
            self.stop(grace=grace)

    def _end(self, proc: subprocess.Popen[bytes], grace: float) -> None:
        pgid = proc.pid
        # regions of a server killed while loading are never unlinked: note them to clean up
        regions = shm_regions(p.pid for p in group_processes(pgid))
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(max(grace, 0.0))
            except subprocess.TimeoutExpired:
                kill_group(pgid, signal.SIGTERM)
                try:
                    proc.wait(min(max(grace, 1.0), 3.0))
                except subprocess.TimeoutExpired:
                    kill_group(pgid, signal.SIGKILL)
                    proc.wait()
        # the stubs notice their parent is gone and exit on their own; end the stragglers
        survivors = wait_group_gone(pgid, 2.0)
        if survivors:
            survivors = terminate_group(pgid, grace=1.0)
        if not survivors:
            remove_shm_regions(regions)
        if survivors:
            listed = "; ".join(f"{p.pid}: {p.cmdline[:120]}" for p in survivors)
            raise ServerError(
                f"processes of tritonserver {pgid} survived SIGKILL: {listed}. "
                "End them by hand (kill -9 <pid>).",
                log_tail=self.log_tail(),
            )
