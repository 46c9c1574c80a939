"""How :class:`~tritonpy.Image` turns bytes into pixels fast: straight to the size the model
needs, with the JPEG decoder's reduced-size decoding where it can, and the images of a merged
batch decoded on a small thread pool.

Why each piece:

* resizing each image right after decoding it touches its pixels while they are still in
  cache, and the model never holds a batch of full-size images;
* libjpeg decodes at 1/2, 1/4 or 1/8 of the size by scaling in the DCT, which skips most of
  the inverse transform and colour conversion of the pixels it would throw away;
* OpenCV releases the GIL while it decodes and resizes, so on a machine with idle cores the
  images of one batch decode in parallel inside the single-threaded stub.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Callable, List, Optional, Sequence, Tuple

#: the most decoding threads one process starts (more cores rarely help a Python stub)
MAX_THREADS = 4
#: a batch decodes on threads only from this many encoded bytes: handing an image to a thread
#: costs tens of microseconds, more than decoding a small PNG (a 640x480 JPEG: ~100 KB, ms)
PARALLEL_MIN_BYTES = 64 * 1024
_REDUCED_FACTORS = (8, 4, 2)


def reduced_factor(source: Tuple[int, int], target: Tuple[int, int]) -> int:
    """The largest JPEG scale denominator (8, 4, 2; 1 for none) whose reduced image still has
    at least ``target`` pixels both ways in either orientation (EXIF may rotate it).

    >>> reduced_factor((640, 480), (224, 224)), reduced_factor((640, 480), (320, 320))
    (2, 1)
    """
    short_side, long_target = min(source), max(target)
    for factor in _REDUCED_FACTORS:
        if short_side // factor >= long_target:
            return factor
    return 1


@cache
def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count), read once:
    a stub's affinity is set when it starts."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


#: an image's (width, height) read from its header, None when the header does not say
HeaderSize = Optional[Tuple[int, int]]


class Undecoded(list):  # type: ignore[type-arg]
    """One request's encoded images (bytes per row), decoded when the batch is merged: the
    rows of all requests then decode together, on the thread pool. ``sizes`` holds each
    row's size from its header, read once when the request was screened."""

    __slots__ = ("name", "sizes")

    def __init__(self, name: str, rows: Sequence[bytes], sizes: Sequence[HeaderSize]) -> None:
        super().__init__(rows)
        self.name = name
        self.sizes = sizes


_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _shared_pool(threads: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="tritonpy-image")
        return _pool


#: (input name, position in its request, encoded bytes, header size, row of the merged batch)
_Job = Tuple[str, int, bytes, HeaderSize, int]


def decode_rows(
    values: Sequence[Any],
    decode_row: Callable[[str, int, bytes, HeaderSize, int], Any],
    threads: Optional[int],
) -> List[Any]:
    """The rows of ``values`` (each an :class:`Undecoded` request or a list of ready rows, such
    as an optional input's default) as one list, every encoded row decoded by
    ``decode_row(name, position in its request, data, header size, row in the merged
    batch)``. With ``threads`` > 1
    (None: the usable cores, at most ``MAX_THREADS``) and
    several rows to decode, together at least ``PARALLEL_MIN_BYTES``, they are decoded in
    parallel; the first failure is raised once all are done."""
    if len(values) == 1 and type(values[0]) is Undecoded and len(values[0]) == 1:
        # one request of one image (most calls at low load): no job list, no pool
        only = values[0]
        return [decode_row(only.name, 0, only[0], only.sizes[0], 0)]
    jobs: List[_Job] = []
    slots: List[Any] = []
    for value in values:
        if isinstance(value, Undecoded):
            for position, data in enumerate(value):
                slots.append(len(jobs))
                jobs.append((value.name, position, data, value.sizes[position], len(slots) - 1))
        else:
            slots.extend(_Ready(row) for row in value)

    def run(job: _Job) -> Any:
        try:
            return decode_row(*job)
        except Exception as exc:  # raised below, in order, once every job has finished
            return _Failed(exc)

    if threads is None:
        threads = min(MAX_THREADS, usable_cores())
    if threads > 1 and len(jobs) > 1 and sum(len(job[2]) for job in jobs) >= PARALLEL_MIN_BYTES:
        decoded = list(_shared_pool(threads).map(run, jobs))
    else:
        decoded = [run(job) for job in jobs]
    for result in decoded:
        if isinstance(result, _Failed):
            raise result.error
    return [slot.row if isinstance(slot, _Ready) else decoded[slot] for slot in slots]


class _Ready:
    __slots__ = ("row",)

    def __init__(self, row: Any) -> None:
        self.row = row


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error
