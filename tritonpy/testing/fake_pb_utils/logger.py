"""pb_utils logging: ``Logger``, ``LogLevel`` and the recorded :data:`log_records`."""

from __future__ import annotations

import enum
import logging
from typing import List, NamedTuple, Union

_log = logging.getLogger("tritonpy.fake_pb_utils")


class LogLevel(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


class LogRecord(NamedTuple):
    level: LogLevel
    message: str


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
        log_records.append(LogRecord(lvl, str(msg)))
        _log.log(_PY_LEVELS[lvl], "%s", msg)

    @staticmethod
    def log_info(msg: str) -> None:
        Logger.log(msg, LogLevel.INFO)

    @staticmethod
    def log_warn(msg: str) -> None:
        Logger.log(msg, LogLevel.WARNING)

    @staticmethod
    def log_error(msg: str) -> None:
        Logger.log(msg, LogLevel.ERROR)

    @staticmethod
    def log_verbose(msg: str) -> None:
        Logger.log(msg, LogLevel.VERBOSE)
