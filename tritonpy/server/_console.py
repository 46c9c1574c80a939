"""The server log, as it grows, turned into console lines prefixed by the model they are about.

Triton writes one log for everything: its own lines (``I1130 23:11:58.58 5689 file.cc:12]
"message"``), the lines models log through ``pb_utils.Logger`` (``model.py:8]``) and, raw,
whatever the stubs print to stdout or stderr (``print``, tracebacks). Triton's lines name the
model in several forms (``'talk'``, ``talk_0``, ``loading: talk:1``, ``.../talk/1/model.py``);
raw stub output names nothing, so it is given to the repository's only Python model when there
is one, else shown as ``[stub]``. Server chatter (tables, CUDA and metrics notices) is left
to the log file.

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
        self.models = sorted(set(models), key=len, reverse=True)
        self.fallback = fallback
        self.rewrite = rewrite
        self._in_table = False
        names = "|".join(re.escape(m) for m in self.models) or r"(?!x)x"
        self._named = re.compile(
            rf"'(?P<a>{names})(?:_\d+)?'"  # 'talk', 'talk_0'
            rf"|(?<![\w.-])(?P<b>{names}):\d+\b"  # loading: talk:1
            rf"|: (?P<c>{names})_\d+ \("  # ModelInstanceInitialize: talk_0 (CPU device 0)
            rf"|/(?P<d>{names})/\d+/"  # .../talk/1/model.py
        )

    def model_of(self, text: str) -> Optional[str]:
        """The model a line names, if any."""
        match = self._named.search(text)
        if match is None:
            return None
        return next(g for g in match.groups() if g is not None)

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
            return [f"[{self.model_of(text) or self.fallback or STUB}] {text}"]
        level, source, message = parsed["level"], parsed["source"], _unquote(parsed["msg"])
        if not message:
            return []  # the header of a table that follows
        model = self.model_of(message)
        from_python = source.split(":")[0].endswith(".py")  # pb_utils.Logger
        if from_python:
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
        """Echo the complete lines appended since the last call."""
        self._show(self._tail.read_lines())

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
