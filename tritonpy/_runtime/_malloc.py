"""glibc's ``malloc`` set up for a stub process that allocates large buffers on every call.

A model that decodes images or builds output batches allocates the same few hundred KB to
MB of numpy buffers on every ``execute()``. With glibc's defaults, memory freed at the top of
the heap beyond a small threshold is handed back to the kernel, so the next call faults the
same pages in again: measured in the r24.10 stub on a hand-written 640x480 JPEG -> 224x224
preprocessing model, 418 page faults and ~0.9 ms of system time per one-image request
(a third of its CPU). Raising the trim threshold (freed memory up to
:data:`TRIM_THRESHOLD` stays with the process) and fixing the mmap threshold (buffers up to
:data:`MMAP_THRESHOLD` come from the heap, where they are reused, instead of a fresh
``mmap`` each time) makes those calls fault nothing. Both are needed: setting either one
stops glibc from moving the other by itself, which then stays at its 128 KiB start (measured
on a numpy-only model of the same allocations: 396 faults per request untouched, 374 with the
trim threshold alone, 340 with the mmap threshold alone, 0 with both).

The cost: a stub keeps up to :data:`TRIM_THRESHOLD` of freed memory instead of returning it.
Each model instance is its own stub process, so the setting is per instance; a model opts out
with ``tune_malloc = False``. On a C library without ``mallopt`` (musl, macOS) nothing is
changed.
"""

from __future__ import annotations

import ctypes
import os
from typing import Optional

#: ``mallopt`` parameters, from glibc's malloc.h
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: buffers below this come from the heap (glibc's largest allowed value on 64-bit systems:
#: half of a thread arena's 64 MiB heap)
MMAP_THRESHOLD = 32 * 1024 * 1024
#: freed memory at the top of the heap is kept up to this much (glibc's default is 128 KiB,
#: raised by itself to twice the largest mmap'ed buffer freed so far)
TRIM_THRESHOLD = 64 * 1024 * 1024

_tuned: Optional[bool] = None


def glibc_version() -> Optional[str]:
    """The running glibc's version (``"2.36"``), or None on another C library."""
    try:
        name = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    if not name or not name.startswith("glibc "):
        return None
    return name.split(" ", 1)[1]


def tune_malloc() -> bool:
    """Set glibc's trim and mmap thresholds for this process (once; later calls return the
    first outcome). True when glibc took both settings; False on another C library, where
    nothing changes.

    Example::

        from tritonpy._runtime._malloc import tune_malloc
        tune_malloc()   # True on glibc
    """
    global _tuned
    if _tuned is None:
        _tuned = _apply()
    return _tuned


def _apply() -> bool:
    if glibc_version() is None:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mmap_threshold = MMAP_THRESHOLD if ctypes.sizeof(ctypes.c_void_p) == 8 else 512 * 1024
    # mallopt returns 1 on success; the mmap threshold first, since setting either one stops
    # glibc from moving both by itself
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
