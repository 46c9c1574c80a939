"""Read and interpret tritonserver's log (release 2.51 formats).

Lines of interest::

    E1129 09:28:54.343373 3445 model_lifecycle.cc:642] "failed to load 'm' version 1: Internal: ..."
    I1129 09:28:48.425246 3180 model_lifecycle.cc:839] "successfully loaded 'add_sub'"
    I1129 09:28:48.457799 3180 http_server.cc:4713] "Started HTTPService at 127.0.0.1:18000"
    E1129 09:30:10.068850 3959 main.cc:245] "failed to start GRPC service: Unavailable - Socket
        '127.0.0.1:18001' already in use "
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Callable, Deque, Dict, List, Match, Optional, Pattern, Set, Tuple

from ._tail import FileTail

_PREFIX = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+\] ")
_FAILED = re.compile(
    r"failed to load '(?P<name>[^']+)' version (?P<version>\d+): (?P<msg>.*?)\"?\s*$"
)
_POLL_FAILED = re.compile(r"Poll failed for model directory '(?P<name>[^']+)': (?P<msg>.*?)\"?\s*$")
_LOADED = re.compile(r"successfully loaded '(?P<name>[^']+)'")
_LOADING = re.compile(r"\"loading: (?P<name>[^:\"]+):\d+\"")
_STARTED_HTTP = re.compile(r"Started HTTPService at (?P<addr>\S+?)\"")
_PORT_CLASH = re.compile(r"failed to start \w+ service.*(already in use|Address already in use)")
# the stub's own dynamic loader error; the launcher then waits forever for it
_STUB_LOAD = re.compile(
    r"(?P<path>\S*triton_python_backend_stub): error while loading shared libraries: (?P<msg>.*)$"
)
# the stub found no model file and exits; the launcher then waits until the timeout
_NO_MODEL_FILE = re.compile(r"Python model file not found in '(?P<path>[^']+)'")
_NO_CLASS = "has no attribute 'TritonPythonModel'"


def _unescape(text: str) -> str:
    """The logger writes messages as JSON-style quoted strings (``\\n``, ``\\"``)."""
    try:
        value = json.loads(f'"{text}"')
        return value if isinstance(value, str) else text
    except ValueError:
        return text.replace("\\n", "\n").replace('\\"', '"')


class LogFollower:
    """Follow a growing log file from a byte offset, parsing complete lines as they arrive.

    Example::

        follower = LogFollower(Path("/tmp/server.log"))
        follower.poll()
        follower.failures      # {"broken": "Internal: SyntaxError: ..."}
    """

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self._tail = FileTail(path, offset)
        self.failures: Dict[str, str] = {}
        self.loaded: Set[str] = set()
        self.loading: Set[str] = set()
        self.http_started: List[str] = []
        self.port_clash: Optional[str] = None

    @property
    def offset(self) -> int:
        """The byte offset read up to."""
        return self._tail.offset

    def poll(self) -> None:
        """Read what was appended since the last call and update the parsed state."""
        for line in self._tail.read_lines():
            self._parse(line)

    def _stub_failed(self, path: str, error: str) -> None:
        # a model's own stub lives beside its config.pbtxt; the backend's serves every model
        # that is still loading
        owner = Path(path).parent
        own_stub = (owner / "config.pbtxt").is_file()
        names = {owner.name} if own_stub else self.loading - self.loaded
        for name in sorted(names):
            self.failures.setdefault(name, _stub_message(path, error))

    def _model_file_missing(self, path: Path) -> None:
        # <repository>/<model>/<version>/<file>
        if len(path.parts) < 3:
            return
        name, version = path.parts[-3], path.parts[-2]
        self.failures.setdefault(
            name,
            f"version {version} of model {name!r} has no {path.name} (looked for {path}). "
            f"Name the model file {path.name} (the name is case-sensitive), or set "
            f'default_model_filename: "<your file>.py" in {name}/config.pbtxt',
        )

    def _parse(self, line: str) -> None:
        # the first rule whose marker is in the line decides (a cheap test before the regex)
        for marker, pattern, action in _LINE_RULES:
            if marker in line:
                match = pattern.search(line)
                if match:
                    action(self, match, line)
                return

    def _load_failed(self, match: Match[str], line: str) -> None:
        self.failures[match["name"]] = _unescape(match["msg"])

    def _model_loaded(self, match: Match[str], line: str) -> None:
        self.loaded.add(match["name"])

    def _model_loading(self, match: Match[str], line: str) -> None:
        self.loading.add(match["name"])

    def _http_started(self, match: Match[str], line: str) -> None:
        self.http_started.append(match["addr"])

    def _no_model_file(self, match: Match[str], line: str) -> None:
        self._model_file_missing(Path(match["path"]))

    def _stub_cannot_load(self, match: Match[str], line: str) -> None:
        self._stub_failed(match["path"], match["msg"].strip())

    def _port_taken(self, match: Match[str], line: str) -> None:
        self.port_clash = _PREFIX.sub("", line).strip().strip('"').strip()


#: (marker, pattern, action): the log lines the follower understands, in order of precedence
_LINE_RULES: Tuple[
    Tuple[str, Pattern[str], Callable[[LogFollower, Match[str], str], None]], ...
] = (
    ("failed to load '", _FAILED, LogFollower._load_failed),
    ("Poll failed for model directory", _POLL_FAILED, LogFollower._load_failed),
    ("successfully loaded '", _LOADED, LogFollower._model_loaded),
    ("loading: ", _LOADING, LogFollower._model_loading),
    ("Started HTTPService at", _STARTED_HTTP, LogFollower._http_started),
    ("Python model file not found in", _NO_MODEL_FILE, LogFollower._no_model_file),
    ("error while loading shared libraries", _STUB_LOAD, LogFollower._stub_cannot_load),
    ("failed to start", _PORT_CLASH, LogFollower._port_taken),
)


def _stub_message(path: str, error: str) -> str:
    return (
        f"its Python backend stub {path} cannot start: {error}. The stub was built for a "
        f"Python whose libpython is not on the library path: give the model a stub for its "
        f"environment's Python ('tritonpy stub MODEL_DIR --python X.Y'), or add that Python's "
        f"lib directory to LD_LIBRARY_PATH"
    )


def failure_hint(name: str, text: str) -> str:
    """A fix for a load failure Triton words in its own terms, or ``""``.

    >>> text = "AttributeError: module '1.model' has no attribute 'TritonPythonModel'"
    >>> failure_hint("pre", text)[:54]
    "model 'pre': its model.py defines no TritonPythonModel"
    """
    if _NO_CLASS in text:
        return (
            f"model {name!r}: its model.py defines no TritonPythonModel, the name the Python "
            "backend instantiates. Add `TritonPythonModel = YourClass` at the end of the file "
            "(YourClass: your tritonpy.Model subclass or hand-written model class)"
        )
    return ""


def read_tail(path: Path, n: int, *, start: int = 0) -> str:
    """The last ``n`` lines of ``path`` (from byte ``start`` on), verbatim."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            # ~512 bytes per wanted line is enough for Triton's long lines and tables
            fh.seek(max(start, size - max(n, 1) * 512))
            data = fh.read()
    except OSError:
        return ""
    lines: Deque[str] = deque(data.decode("utf-8", "replace").splitlines(), maxlen=n)
    return "\n".join(lines)


def lines_about(path: Path, name: str, *, start: int = 0, limit: int = 40) -> List[str]:
    """Error/warning lines of the log that name model ``name``, each with its continuation
    lines (a Python traceback printed by the stub), at most ``limit`` lines in all."""
    word = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
    out: List[str] = []
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return out
    keep = False
    for line in text.splitlines():
        if line.startswith(("+", "|")):
            keep = False
            continue
        if _PREFIX.match(line):
            keep = line[0] in "EWF" or "pb_stub" in line
            # the "failed to load" line itself is reported, unescaped, by the caller
            keep = keep and bool(word.search(line)) and "failed to load '" not in line
            if keep:
                out.append(line)
        elif keep and line.strip():
            out.append(line)
        if len(out) >= limit:
            break
    return out


def new_log_file(repository: Path, directory: Path, *, keep: int = 20) -> Path:
    """A fresh log file path for serving ``repository``, in ``directory``:
    ``serve-<repository name>-<YYYYmmdd-HHMMSS>-<pid>.log``. Older serve logs beyond the
    ``keep`` newest are deleted, so the directory does not grow without bound.

    Example::

        new_log_file(Path("model_repository"), cache_directory() / "logs")
        # ~/.cache/tritonpy/logs/serve-model_repository-20241130-231158-4242.log
    """
    directory.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", repository.absolute().name) or "repository"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = directory / f"serve-{name}-{stamp}-{os.getpid()}.log"
    old = sorted(directory.glob("serve-*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in old[max(keep - 1, 0) :]:
        with contextlib.suppress(OSError):
            stale.unlink()
    return path


def temporary_log_file() -> Path:
    """A log path in a new temporary directory, removed when Python exits."""
    directory = tempfile.mkdtemp(prefix="tritonpy-server-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return Path(directory) / "tritonserver.log"
