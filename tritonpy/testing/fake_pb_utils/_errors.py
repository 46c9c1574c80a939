"""pb_utils errors: ``TritonModelException`` and ``TritonError`` with its codes."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import enum
from typing import Union


class TritonModelException(Exception):
    """The exception the real stub raises for misuse of pb_utils objects."""


class ServerAbort(BaseException):
    """Not in the real module: a call that makes tritonserver itself abort (measured). A
    BaseException, so that a model's ``except Exception`` cannot swallow it, as it could not
    outlive the server; the harness turns it into a ModelBugError naming the rule."""


class ErrorCode(enum.IntEnum):
    """TRITONSERVER_Error_Code values, as ``TritonError.<NAME>`` exposes them."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


def error_code_name(code: Union[int, ErrorCode]) -> str:
    """The name of a TritonError code: ``error_code_name(3) == "INVALID_ARG"``."""
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return "UNKNOWN"


class TritonError:
    """An error to put into an :class:`InferenceResponse`."""

    UNKNOWN = ErrorCode.UNKNOWN
    INTERNAL = ErrorCode.INTERNAL
    NOT_FOUND = ErrorCode.NOT_FOUND
    INVALID_ARG = ErrorCode.INVALID_ARG
    UNAVAILABLE = ErrorCode.UNAVAILABLE
    UNSUPPORTED = ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = ErrorCode.ALREADY_EXISTS
    CANCELLED = ErrorCode.CANCELLED

    def __init__(self, message: str, code: Union[int, ErrorCode] = ErrorCode.INTERNAL) -> None:
        if not isinstance(message, str):
            raise TypeError(f"TritonError message must be a str, got {type(message).__name__}")
        self._message = message
        try:
            self._code = ErrorCode(int(code))
        except (TypeError, ValueError):
            raise TypeError(
                f"TritonError code must be one of TritonError.UNKNOWN ... TritonError.CANCELLED, "
                f"got {code!r}"
            ) from None

    def message(self) -> str:
        return self._message

    def code(self) -> ErrorCode:
        return self._code

    def code_name(self) -> str:
        """Not in the real module: the code's name, e.g. ``"INVALID_ARG"``."""
        return self._code.name

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, TritonError.{self._code.name})"
