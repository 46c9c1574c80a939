"""Installing the fake pb_utils as ``sys.modules["triton_python_backend_utils"]`` (re-exported
by :mod:`tritonpy.testing._harness` and :mod:`tritonpy.testing`)."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import sys
import threading
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator, List

from . import fake_pb_utils as pb

PB_UTILS = "triton_python_backend_utils"
_MISSING = object()
_install_lock = threading.RLock()
_install_stack: List[Any] = []


def install_fake_pb_utils() -> ModuleType:
    """Put the fake pb_utils into ``sys.modules["triton_python_backend_utils"]`` and return it.
    Undo with :func:`uninstall_fake_pb_utils` (calls nest)."""
    with _install_lock:
        _install_stack.append(sys.modules.get(PB_UTILS, _MISSING))
        sys.modules[PB_UTILS] = pb
    return pb


def uninstall_fake_pb_utils() -> None:
    """Restore what ``sys.modules["triton_python_backend_utils"]`` held before the matching
    :func:`install_fake_pb_utils`."""
    with _install_lock:
        if not _install_stack:
            return
        previous = _install_stack.pop()
        if previous is _MISSING:
            sys.modules.pop(PB_UTILS, None)
        else:
            sys.modules[PB_UTILS] = previous


@contextmanager
def fake_pb_utils_installed() -> Iterator[ModuleType]:
    """``with fake_pb_utils_installed() as pb_utils:`` the fake is importable inside."""
    module = install_fake_pb_utils()
    try:
        yield module
    finally:
        uninstall_fake_pb_utils()
