"""``TritonServer``: launch a real tritonserver on a model repository, wait until every model is
ready, and stop it together with all of its stub processes."""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Set,
    Type,
)

from .._tooling.errors import ServerError
from .._tooling.installation import Installation, resolve_installation
from .._tooling.options import changed
from ..client import ModelStatus, health_ready, repository_index
from . import _shadow as shadows
from ._command import server_command
from ._console import ConsoleLog, LogEcho
from ._endpoints import Endpoints
from ._failures import condensed, port_clash_message
from ._loadfail import LoadFailure
from ._logs import LogFollower, read_tail, temporary_log_file
from ._options import PathLike, ServerOptions
from ._preflight import preflight
from ._procs import end_process_group
from ._remote import RemoteRepository, load_args, open_remote, prepare_remote
from ._shadow import StubPlan, plan_stubs, remove_shadow, repository_models, user_path
from ._startfail import FAILURE_GRACE_S, StartReports
from ._supervise import StubHealer

if TYPE_CHECKING:
    from ..check import Report

_POLL_S = 0.1
_PORT_ATTEMPTS = 3

_LIVE: Set[TritonServer] = set()


def _stop_all_at_exit() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop(grace=5.0)


atexit.register(_stop_all_at_exit)


class _PortClash(Exception):
    pass


def _text(path: Optional[PathLike]) -> Optional[str]:
    return None if path is None else os.fspath(path)


class TritonServer(Endpoints, StartReports):
    """A real tritonserver serving ``model_repository`` on loopback ports.

    Its options are a :class:`~tritonpy.server.ServerOptions` (``options``), or keyword
    arguments naming its fields, or both (the keywords replace fields).

    By default it runs the tritonserver of the ``nvidia-pytriton`` wheel with a prepared Python
    backend directory holding the stub for ``python`` (default: this interpreter), on free
    ports (``default_ports``, e.g. Triton's ``(8000, 8001, 8002)``, are taken when free).
    ``start()`` returns once the server and every model of the repository are READY; it
    raises :class:`ModelLoadError` (with the model's own error text and the log tail) when a
    model fails to load, and :class:`ServerTimeoutError` after ``startup_timeout`` seconds.
    ``stop()`` ends the server and every ``triton_python_backend_stub`` it started.

    - ``check``: run ``tritonpy check`` against the serving Python first and raise
      :class:`~tritonpy.server.PreflightError` on errors (without starting).
    - ``env_stubs``: a model whose ``EXECUTION_ENV_PATH`` environment has another Python than
      the server's gets the wheel's stub for that Python, through a temporary shadow
      repository of symbolic links (nothing is written into the model directory; removed on
      stop). A stub the user put beside config.pbtxt wins.
    - ``unpacked_envs`` (on by default): an archive in its model's directory is served from
      tritonpy's unpacked copy, not extracted at every start (``unpacked`` names those models).
    - ``log_echo``: called with each model log line, traceback and server error as it is
      written, prefixed by the model's name (``[preprocess] ...``).
    - ``option_names``: how messages name options (``SERVE_NAMES``: ``--http-port``).
    - ``heal`` (on by default): reload a model whose stub process died (see
      :mod:`tritonpy.server._supervise`; the server runs ``--model-control-mode=explicit``),
      reporting each step to ``heal_report`` (default: ``log_echo``).
    - ``reloadable``: run ``--model-control-mode=explicit`` even without ``heal``, so that
      models can be loaded, reloaded and unloaded through the repository API (what
      :class:`~tritonpy.server.RepositoryWatcher` does).
    - ``allow_failures``: a model that fails to load at startup does not fail ``start()``:
      the server serves the others, and ``load_failures`` says why (with ``reloadable``, a
      fixed model can then be loaded through the repository API).
    - ``check_report``: called with the preflight check's report (``check=True``) before the
      server is launched, so its warnings can be shown first.

    After a failed start (or one with ``allow_failures``), ``load_failures`` holds each failed
    model's
    :class:`~tritonpy.server.LoadFailure` (the exception, the user's frames, the fix).

    ``env`` holds extra environment variables for the server (on top of ``os.environ``);
    ``extra_args`` are appended to the command line; the server's stdout/stderr go to
    ``log_file`` (a temporary file by default, removed when Python exits). Models' Python is
    run with ``PYTHONDONTWRITEBYTECODE=1`` unless ``env`` says otherwise, so serving writes no
    ``__pycache__`` into the model directories.

    Example::

        with TritonServer("model_repository", http_port=8000) as server:   # or ServerOptions(...)
            client = tritonclient.http.InferenceServerClient(server.http_url[len("http://"):])
            print(server.models_ready())          # ['add_sub', 'preprocess']
    """

    def __init__(
        self, model_repository: PathLike, options: Optional[ServerOptions] = None, **changes: Any
    ) -> None:
        """``options`` (a :class:`~tritonpy.server.ServerOptions`), with the keyword arguments
        replacing its fields (``TritonServer(repo, http_port=8000)``)."""
        chosen = changed(ServerOptions, options, changes)
        ports = (chosen.http_port, chosen.grpc_port, chosen.metrics_port)
        super().__init__(chosen.host, ports, chosen.default_ports, chosen.option_names)
        #: the options it was made with
        self.options = chosen
        self.env = dict(chosen.env or {})
        #: the bucket folder served (``s3://...``); ``None`` for a local repository
        self.remote: Optional[RemoteRepository] = open_remote(model_repository, self.env)
        #: the repository's directory: for ``s3://``, the local mirror of its configurations
        self.model_repository = (
            Path(model_repository).absolute() if self.remote is None else self.remote.mirror
        )
        self.tritonserver = _text(chosen.tritonserver)
        self.backend_directory = _text(chosen.backend_directory)
        self.python = _text(chosen.python)
        self.startup_timeout = float(chosen.startup_timeout)
        self.log_verbose = int(chosen.log_verbose)
        self.extra_args = [str(a) for a in chosen.extra_args]
        self._log_file = None if chosen.log_file is None else Path(chosen.log_file)
        self._log_path: Optional[Path] = None
        self._log_start = 0
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._installation: Optional[Installation] = None
        self._lock = threading.RLock()
        self.returncode: Optional[int] = None
        self.command: List[str] = []
        self.check = chosen.check
        self.env_stubs = chosen.env_stubs
        self._log_echo = chosen.log_echo
        self.heal = chosen.heal
        self._heal_report = chosen.heal_report or chosen.log_echo or (lambda line: None)
        #: the stub watch while serving with ``heal`` (its ``events`` say what it did)
        self.healer: Optional[StubHealer] = None
        self._echo: Optional[LogEcho] = None
        self._shadow: Optional[Path] = None
        #: the models given a stub for their environment's Python by the last start()
        self.provided_stubs: Dict[str, StubPlan] = {}
        #: the models whose environment archive the last start() served unpacked
        self.unpacked: Dict[str, shadows.UnpackedEnv] = {}
        #: the warnings of the preflight check of the last start() (``check=True``)
        self.preflight_report: Optional[Report] = None
        self.reloadable = chosen.reloadable
        self.allow_failures = chosen.allow_failures
        self._check_report = chosen.check_report
        #: why each model failed to load, after a start() that raised ModelLoadError
        self.load_failures: List[LoadFailure] = []

    # ---------------------------------------------------------------------------- state
    @property
    def pid(self) -> Optional[int]:
        """The tritonserver process id (also its process group id), ``None`` when stopped."""
        return None if self._proc is None else self._proc.pid

    @property
    def log_path(self) -> Optional[Path]:
        """Where the server's output goes (known once started)."""
        return self._log_path

    @property
    def repository(self) -> str:
        """The repository as the user named it: the directory, or the ``s3://`` URL."""
        return str(self.model_repository if self.remote is None else self.remote.url)

    @property
    def served_repository(self) -> Path:
        """The directory tritonserver serves: the model repository, or the temporary shadow
        of it while models get stubs for their environments (see ``env_stubs``)."""
        return self._shadow if self._shadow is not None else self.model_repository

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the server's output (of the latest launch), with the user's
        paths where the server saw the shadow repository's."""
        if self._log_path is None:
            return ""
        return self._user_text(read_tail(self._log_path, n, start=self._log_start))

    def _user_text(self, text: str) -> str:
        return user_path(text, self._shadow, self.model_repository)

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
            if self.remote is not None:
                self.model_repository = self.remote.start_mirror()
            elif not self.model_repository.is_dir():
                raise ServerError(
                    f"model repository {str(self.model_repository)!r} is not a directory. "
                    "Pass the directory that holds one sub-directory per model."
                )
            if self._installation is None:
                merged = {**os.environ, **self.env}
                self._installation = resolve_installation(
                    tritonserver=self.tritonserver,
                    backend_directory=self.backend_directory,
                    python=self.python,
                    env=merged,
                    names=self.names,
                )
            self._check_requested_ports()
            self.load_failures = []
            inst = self._installation
            plans: Dict[str, StubPlan] = {}
            if self.remote is not None:
                self.preflight_report = prepare_remote(self.remote, inst, self.check, self.names)
            elif self.env_stubs and inst.wheel is not None and inst.python_xy is not None:
                plans = plan_stubs(self.model_repository, inst.python_xy, inst.wheel)
            if self.check and self.remote is None:
                self.preflight_report = preflight(
                    self.model_repository,
                    server_python=inst.python_xy,
                    provided_stubs=plans,
                    names=self.names,
                )
            if self.preflight_report is not None and self._check_report is not None:
                self._check_report(self.preflight_report)
            self._prepare_log()
            self.provided_stubs = plans
            unpacked = self.options.unpacked_envs and self.remote is None
            self._shadow, self.unpacked = shadows.prepare(self.model_repository, plans, unpacked)
            try:
                return self._launch_until_ready(inst)
            except BaseException:
                self._release()
                raise

    def _launch_until_ready(self, inst: Installation) -> TritonServer:
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            self._choose_ports()
            self._launch(inst)
            try:
                self._wait_until_ready()
                if self.heal and self._proc is not None:
                    self.healer = StubHealer(
                        self._proc.pid,
                        self.http_url,
                        report=self._heal_report,
                        reload_timeout=self.startup_timeout,
                        models=self._expected_models if self.remote is not None else None,
                    ).start()
                return self
            except _PortClash as clash:
                self._stop_quietly(FAILURE_GRACE_S)
                if not self._clash_is_ours(str(clash)) or attempt == _PORT_ATTEMPTS:
                    raise ServerError(
                        port_clash_message(self._ports or [], self.host, str(clash), self.names),
                        log_tail=self.log_tail(),
                    ) from None
            except BaseException:
                self._stop_quietly(FAILURE_GRACE_S)
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
            if self.healer is not None:  # stubs ending with the server are no deaths
                self.healer.stop()
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
        self._release()

    def _release(self) -> None:
        """End the log echo (after echoing what is left) and remove the shadow repository.
        ``_shadow`` keeps its (removed) path so later messages still map it to the user's."""
        if self._echo is not None:
            self._echo.stop()
            self._echo = None
        if self._shadow is not None:
            remove_shadow(self._shadow)
        if self.remote is not None:
            self.remote.remove_mirror()

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
        return f"TritonServer({self.repository!r}, {state})"

    # ----------------------------------------------------------------------- internals
    def _prepare_log(self) -> None:
        if self._log_path is not None:
            return
        if self._log_file is not None:
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log_path = self._log_file.absolute()
        else:
            self._log_path = temporary_log_file()

    def _build_command(self, inst: Installation) -> List[str]:
        assert self._ports is not None
        return server_command(
            str(inst.tritonserver),
            repository=self.repository if self.remote is not None else str(self.served_repository),
            backends=str(inst.backend_directory),
            host=self.host,
            ports=(self._ports[0], self._ports[1], self._ports[2]),
            log_verbose=self.log_verbose,
            explicit=(self.heal or self.reloadable)
            and not any("--model-control-mode" in a for a in self.extra_args),
            exit_on_error=not self.allow_failures,
            extra_args=[*load_args(self.remote, self.extra_args), *self.extra_args],
        )

    def _launch(self, inst: Installation) -> None:
        assert self._log_path is not None
        self.command = self._build_command(inst)
        env = dict(inst.env)
        env.setdefault("PYTHONDONTWRITEBYTECODE", "1")  # no __pycache__ in model directories
        with open(self._log_path, "ab") as log:
            self._log_start = log.tell()
            try:
                self._proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,  # own process group: stubs are killed with it
                )
            except OSError as exc:
                raise ServerError(
                    f"cannot run tritonserver {str(inst.tritonserver)!r}: {exc}. Check the "
                    f"path and that it is executable ({self.names.option('tritonserver', 'PATH')})."
                ) from exc
        _LIVE.add(self)
        if self._log_echo is not None:
            self._echo = LogEcho(
                self._log_path, self._log_start, self._console(), self._log_echo
            ).start()

    def _console(self) -> ConsoleLog:
        models = self._expected_models()
        python = [m for m in models if (self.model_repository / m / "1").exists()]
        fallback = python[0] if len(python) == 1 else (models[0] if len(models) == 1 else None)
        return ConsoleLog(models, fallback=fallback, rewrite=self._user_text)

    def _models_changed(self) -> None:
        """The repository's models changed (``RepositoryWatcher``): the console learns them."""
        echo = self._echo
        if echo is not None:
            echo.console.set_models(self._expected_models())

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
            if follower.failures and not self.allow_failures:
                self._raise_load_error(follower)
            if follower.port_clash:
                raise _PortClash(follower.port_clash)
            if returncode is not None:
                raise ServerError(
                    f"tritonserver exited with code {returncode} before it was ready "
                    f"(repository {self.repository}). The log says why:\n"
                    f"{condensed(self.log_tail(30))}",
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
                    if not self.allow_failures:
                        self._raise_load_error(follower)
                if ready and statuses and all(m.state in ("READY", "") for m in statuses):
                    return
                if self.allow_failures and self._settled(statuses, follower):
                    return
                if ready and not statuses and not self._expected_models():
                    return  # an empty repository
            if time.monotonic() >= deadline:
                self._raise_timeout(follower, statuses)
            time.sleep(_POLL_S)

    def _expected_models(self) -> List[str]:
        return repository_models(self.model_repository)

    def _stop_quietly(self, grace: float) -> None:
        with contextlib.suppress(ServerError):
            self.stop(grace=grace)

    def _end(self, proc: subprocess.Popen[bytes], grace: float) -> None:
        survivors = end_process_group(proc, grace)
        if survivors:
            listed = "; ".join(f"{p.pid}: {p.cmdline[:120]}" for p in survivors)
            raise ServerError(
                f"processes of tritonserver {proc.pid} survived SIGKILL: {listed}. "
                "End them by hand (kill -9 <pid>).",
                log_tail=self.log_tail(),
            )
