"""Unloading a model as the stub does: ``finalize()`` is called once, and an exception it
raises is logged and the model unloads all the same (python_backend r24.10 src/pb_stub.cc,
``Stub::Finalize``: the error goes to the server log at INFO, no client sees it).

The harness keeps the exception (``harness.finalize_error``), logs it as the server would
(``pb_utils.log_records``) and warns with a :class:`RuntimeWarning`, so a test suite notices
a broken ``finalize()`` without the close failing where the server's unload does not.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

from .fake_pb_utils import _logger


def run_finalize(model_name: str, call: Callable[[], Any]) -> Optional[BaseException]:
    """Run ``call`` (the model's finalize); return what it raised, logged and warned."""
    try:
        call()
    except Exception as exc:  # the stub catches every Python error of finalize()
        text = f"{type(exc).__name__}: {exc}"
        _logger.log_records.append(_logger.LogRecord(_logger.LogLevel.INFO, text))
        warnings.warn(
            f"model {model_name!r}: finalize() raised {text}; the server logs it and unloads "
            f"the model all the same (python_backend r24.10 src/pb_stub.cc Stub::Finalize), "
            f"so the harness closes too (the exception is in harness.finalize_error)",
            RuntimeWarning,
            stacklevel=4,
        )
        return exc
    return None
