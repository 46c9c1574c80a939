"""pb_utils logging: ``Logger``, ``LogLevel`` and the recorded :data:`log_records`."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import enum
import logging
import os
import sys
from typing import Callable, List, NamedTuple, Tuple, Union

_log = logging.getLogger("tritonpy.fake_pb_utils")


class LogLevel(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


class LogRecord(NamedTuple):
    level: LogLevel
    message: str
    #: where the model called the logger (the server's log line shows ``model.py:42``)
    filename: str = ""
    lineno: int = 0

    def server_line(self) -> str:
        """The record as tritonserver 24.10 writes it after its timestamp and thread id
        (``I... model.py:42] "message"``): level letter, file name, line, quoted message.
        VERBOSE lines appear only with ``--log-verbose`` >= 1 there."""
        letter = {LogLevel.WARNING: "W", LogLevel.ERROR: "E"}.get(self.level, "I")
        return f'{letter} {os.path.basename(self.filename)}:{self.lineno}] "{self.message}"'


#: every message logged through :class:`Logger`, in order; clear it with :func:`clear_logs`.
log_records: List[LogRecord] = []

_PY_LEVELS = {
    LogLevel.INFO: logging.INFO,
    LogLevel.WARNING: logging.WARNING,
    LogLevel.ERROR: logging.ERROR,
    LogLevel.VERBOSE: logging.DEBUG,
}


def clear_logs() -> None:
    """Not in the real module: forget the recorded log messages."""
    del log_records[:]


_Level = LogLevel


def _caller() -> Tuple[str, int]:
    """The model's frame that called the logger (the stub takes the caller's frame too)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def _log_at(level: LogLevel) -> Callable[[str], None]:
    """``Logger.log`` at one level."""

    def log_at(msg: str) -> None:
        Logger.log(msg, level)

    return log_at


class Logger:
    """``pb_utils.Logger``: the server log. Here: logging logger ``tritonpy.fake_pb_utils``
    plus :data:`log_records`."""

    LogLevel = LogLevel
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(msg: str, level: Union[int, _Level] = _Level.INFO) -> None:
        lvl = _Level(int(level))
        filename, lineno = _caller()
        log_records.append(LogRecord(lvl, str(msg), filename, lineno))
        _log.log(_PY_LEVELS[lvl], "%s", msg)

    # the stub's shorthands, one per level (Logger.log_warn(msg) == Logger.log(msg, WARNING))
    log_info = staticmethod(_log_at(LogLevel.INFO))
    log_warn = staticmethod(_log_at(LogLevel.WARNING))
    log_error = staticmethod(_log_at(LogLevel.ERROR))
    log_verbose = staticmethod(_log_at(LogLevel.VERBOSE))
