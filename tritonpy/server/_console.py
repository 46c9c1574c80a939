"""The server log, as it grows, turned into console lines prefixed by the model they are about.

Triton writes one log for everything: its own lines (``I1130 23:11:58.58 5689 file.cc:12]
"message"``), the lines models log through ``pb_utils.Logger`` (``model.py:8]``) and, raw,
whatever the stubs print to stdout or stderr (``print``, tracebacks). Triton's lines name the
model in several forms (``'talk'``, ``talk_0``, ``loading: talk:1``, ``.../talk/1/model.py``);
raw stub output names nothing, so a Python traceback the stub prints is kept together and given
to the model whose files its frames name (a BLS caller's traceback is the caller's, whatever
model its message names), other raw output to the repository's only Python model when there is
one, else shown as ``[stub]``. Lines logged through ``pb_utils.Logger`` that start with a
model's name (``router: ValueError ...``, tritonpy's own) are that model's. Server chatter
(tables, CUDA and metrics notices) is left to the log file, and so are the lines of a failed
load (the traceback three times over): the caller reports each failure once, short (see
:mod:`tritonpy.server._loadfail`).

Example::

    console = ConsoleLog(["talk"])
    console.format('W1130 23:11:58.584085 5689 model.py:9] "a warning"')
    # ['[talk] W model.py:9 a warning']
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from ._polling import Poller
from ._tail import FileTail

_PREFIX = re.compile(
    r"^(?P<level>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ (?P<source>[^\s\]]+)\]\s?(?P<msg>.*)$"
)
# notices of a CPU-only machine and the shutdown countdown: true, but not news to a user
_NOISE = (
    "pinned memory",
    "CUDA memory pool",
    "CudaDriverHelper",
    "DCGM",
    "Failed to initialize NVML",
    "CUDA driver version is insufficient",  # an ensemble's CUDA stream, on a CPU-only machine
    "Collecting CPU metrics",
    "HTTP service connections",
    "GRPC service connections",
    "Timeout ",
)
_SIGNAL = re.compile(r"^Signal \(\d+\) received\.\s*$")  # the server's own, on stop
# the lines (and their raw continuations) of a load failure, reported once by the caller
_LOAD_FAILURE = (
    "Failed to initialize Python stub",
    "ERROR: Failed to create instance",
    "failed to load '",
    "Poll failed for model directory",
    "failed to load all models",
)
_STARTUP_FAILED = "error: creating server: "
# the lines that start a traceback, or continue it after an exception line
_TRACEBACK_HEADS = (
    "Traceback (most recent call last):",
    "During handling of the above exception",
    "The above exception was the direct cause",
)
SERVER = "server"
STUB = "stub"


def _unquote(message: str) -> str:
    """Triton quotes its messages JSON-style: ``"a \\"b\\"\\nc"``."""
    message = message.strip()
    if len(message) >= 2 and message[0] == message[-1] == '"':
        try:
            value = json.loads(message)
            if isinstance(value, str):
                return value
        except ValueError:
            pass
        return message[1:-1]
    return message


class ConsoleLog:
    """Formats raw server log lines for the console.

    ``models`` are the repository's model names (to recognise them); ``fallback`` is the model
    raw stub output belongs to when the repository has a single Python model; ``rewrite``
    turns paths of a shadow repository back into the user's.
    """

    def __init__(
        self,
        models: Sequence[str],
        *,
        fallback: Optional[str] = None,
        rewrite: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.fallback = fallback
        self.rewrite = rewrite
        self._in_table = False
        self._swallow = False  # inside a load failure's lines
        self._block: List[str] = []  # a raw traceback being collected
        self.set_models(models)

    def set_models(self, models: Sequence[str]) -> None:
        """Recognise ``models`` from now on (the repository gained or lost models)."""
        self.models = sorted(set(models), key=len, reverse=True)
        names = "|".join(re.escape(m) for m in self.models) or r"(?!x)x"
        self._named = re.compile(
            rf"'(?P<a>{names})(?:_\d+)?'"  # 'talk', 'talk_0'
            rf"|(?<![\w.-])(?P<b>{names}):\d+\b"  # loading: talk:1
            rf"|: (?P<c>{names})_\d+ \("  # ModelInstanceInitialize: talk_0 (CPU device 0)
            rf"|/(?P<d>{names})/\d+/"  # .../talk/1/model.py
        )
        self._path = re.compile(rf"/(?P<d>{names})/\d+/")
        self._leading = re.compile(rf"^(?P<d>{names}): ")  # tritonpy's "router: ValueError"

    def model_of(self, text: str) -> Optional[str]:
        """The model a line names, if any."""
        match = self._named.search(text)
        if match is None:
            return None
        return next(g for g in match.groups() if g is not None)

    def _owner(self, text: str) -> Optional[str]:
        """The model a stub's own text belongs to: a path into a model's directory, else the
        first model it names."""
        match = self._path.search(text)
        return match["d"] if match else self.model_of(text)

    def flush(self) -> List[str]:
        """The lines of a traceback still being collected (the log went quiet, or ends)."""
        block, self._block = self._block, []
        if not block:
            return []
        owner = self._owner("\n".join(block)) or self.fallback or STUB
        return [f"[{owner}] {text}" for text in block]

    def _raw(self, text: str) -> List[str]:
        """Raw stub output: a traceback is collected until its exception line."""
        if self._swallow:
            return []
        if self._block:
            self._block.append(text)
            if text[:1].isspace() or text.startswith(_TRACEBACK_HEADS):
                return []
            return self.flush()  # its exception line: the traceback is complete
        if text.startswith(_TRACEBACK_HEADS):
            self._block.append(text)
            return []
        if text.startswith(_STARTUP_FAILED):
            return []
        return [f"[{self._owner(text) or self.fallback or STUB}] {text}"]

    def format(self, line: str) -> List[str]:
        """The console lines for one raw log line (none for chatter)."""
        line = line.rstrip("\r\n")
        if line.startswith(("+", "|")):
            self._in_table = True
            return []
        if self._in_table and not line.strip():
            self._in_table = False
            return []
        self._in_table = False
        if not line.strip() or any(noise in line for noise in _NOISE) or _SIGNAL.match(line):
            return []
        text = self.rewrite(line)
        parsed = _PREFIX.match(text)
        if parsed is None:  # raw stub output: print(), tracebacks
            return self._raw(text)
        return self.flush() + self._logged(parsed["level"], parsed["source"], parsed["msg"])

    def _logged(self, level: str, source: str, quoted: str) -> List[str]:
        """The console lines of one line the server logged."""
        message = _unquote(quoted)
        from_python = source.split(":")[0].endswith(".py")  # pb_utils.Logger
        self._swallow = not from_python and any(m in message[:80] for m in _LOAD_FAILURE)
        if not message or self._swallow:
            return []  # the header of a table that follows; a load failure
        model = self.model_of(message)
        if from_python:
            leading = self._leading.match(message)
            model = leading["d"] if leading else self._owner(message)
            model = model or self.fallback or STUB
        elif model is None and level == "I":
            return []
        label = model or SERVER
        shown = f"{source} " if from_python else ""
        lines = message.splitlines() or [""]
        out = [f"[{label}] {level} {shown}{lines[0]}"]
        out += [f"[{label}]   {rest}" for rest in lines[1:] if rest.strip()]
        return out


class LogEcho:
    """A thread that follows the log file from ``offset`` and hands each formatted console
    line to ``emit`` as it is written.

    Example::

        echo = LogEcho(Path("serve.log"), 0, ConsoleLog(["talk"]), print)
        echo.start()
        ...
        echo.stop()   # reads what is left, then ends
    """

    def __init__(
        self,
        path: Path,
        offset: int,
        console: ConsoleLog,
        emit: Callable[[str], None],
        *,
        interval: float = 0.1,
    ) -> None:
        self.console = console
        self.emit = emit
        self._tail = FileTail(path, offset)
        self._poller = Poller(self._tick, interval=interval, name="tritonpy-log-echo",
                              finish=self._finish)  # fmt: skip

    def start(self) -> LogEcho:
        self._poller.start()
        return self

    def stop(self) -> None:
        """Echo what is left in the file, then end the thread (idempotent)."""
        self._poller.stop(timeout=5.0)

    def poll(self) -> None:
        """Echo the complete lines appended since the last call; a traceback still being
        collected is echoed once a call finds nothing new."""
        lines = self._tail.read_lines()
        self._show(lines)
        if not lines:
            for shown in self.console.flush():
                self.emit(shown)

    def _show(self, lines: List[str]) -> None:
        for line in lines:
            for shown in self.console.format(line):
                self.emit(shown)

    def _tick(self) -> bool:
        self.poll()
        return True

    def _finish(self) -> None:
        self.poll()
        rest = self._tail.take_rest()
        if rest.strip():
            self._show([rest])
        for shown in self.console.flush():
            self.emit(shown)
