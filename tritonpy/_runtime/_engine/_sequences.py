"""The engine's part for stateful models (``sequence = tp.Sequence(...)``): each sequence's
state, kept per correlation id, and the paths that serve its requests.

What happens to one request of a sequence model, in order:

1. at the start of each ``execute()``, sequences idle for ``idle_timeout_s`` or more are
   evicted (``end_sequence`` called with ``evicted`` True): Triton's sequence batcher frees
   their slot without telling the model, so tritonpy does it itself;
2. the request's flags (a bitmask) and correlation id say its sequence: START makes a new one
   (``start_sequence`` returns its state; a START under an id still open ends that one first,
   evicted, as the server ends it early), any other request continues an open one, and a
   request of an unknown or ended sequence gets ``INVALID_ARG`` alone; a null request (no id,
   no flags: the direct strategy's filler of an empty slot) gets an empty response;
3. the request is decoded and computed on its own (even when the oldest strategy brings the
   requests of several sequences in one ``execute()``: each sequence's state is its own), with
   its :class:`~tritonpy._runtime._sequence.SequenceInfo` in infer's ``sequence`` argument
   (plain numpy tensors of a batched model: the plain-tensor path of ``_plain.py``; other
   plain tensors: the direct path of ``_direct.py``; else the general one); an
   exception fails that request alone and leaves the sequence open;
4. after the END request, the sequence is closed and ``end_sequence`` called.

Streams (a generator ``infer``) take the same steps, each request's parts sent through its
response sender; with ``iterative=True`` each ``execute()`` runs one step of the generator and
reschedules the request until the generator returns (Triton's ``iterative_sequence``).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .._sequence import (
    SEQUENCE_ARGUMENT,
    SEQUENCE_END,
    SEQUENCE_START,
    CorrelationId,
    SequenceInfo,
)
from ..errors import InputError
from ._plain import Tables, row_tables, serve_rows
from ._streaming import Stream, close_parts

if TYPE_CHECKING:
    from .._sequence import Sequence as SequenceDeclaration
    from .engine import Engine


class SequenceStore:
    """The open sequences of one model instance, oldest request first (``engine.sequences``).

    ``clock`` (default ``time.monotonic``) gives the seconds the idle timeout is measured in;
    a test replaces it with its own clock::

        engine_of(harness.model).sequences.clock = lambda: now[0]
    """

    def __init__(
        self,
        declared: SequenceDeclaration,
        start_hook: Callable[[SequenceInfo], Any],
        end_hook: Callable[[SequenceInfo], Any],
    ) -> None:
        self.idle_timeout_s = declared.idle_timeout_s
        #: ``iterative=True``: each execute() runs one step of a request's generator
        self.iterative = declared.iterative
        self.clock: Callable[[], float] = time.monotonic
        #: correlation id -> its sequence, the least recently served first
        self.open: OrderedDict[CorrelationId, SequenceInfo] = OrderedDict()
        #: no open sequence is idle before this time (the least recently served one's last
        #: request plus the timeout; -inf: the next call looks). Why: one comparison a call
        #: where reading the oldest sequence cost ~0.5 us a request (issue 32)
        self.evict_at = -math.inf
        self.start_hook = start_hook
        self.end_hook = end_hook
        #: iterative sequences: (sequence, decoded request, generator, request) of the
        #: request being stepped, by correlation id
        self.running: Dict[CorrelationId, Tuple[Any, ...]] = {}

    def __len__(self) -> int:
        return len(self.open)

    def __contains__(self, correlation_id: object) -> bool:
        return correlation_id in self.open

    def idle(self, now: float) -> List[SequenceInfo]:
        """Remove and return the sequences without a request for ``idle_timeout_s`` at
        ``now`` (the least recently served come first, so the scan stops at the first one
        still active)."""
        limit = now - self.idle_timeout_s
        found: List[SequenceInfo] = []
        open_ = self.open
        while open_:
            oldest = next(iter(open_.values()))
            if oldest.last_seen > limit:
                # every other sequence was served since: none is idle before this one
                self.evict_at = oldest.last_seen + self.idle_timeout_s
                return found
            open_.popitem(last=False)
            self.stop_running(oldest.id)
            found.append(oldest)
        self.evict_at = -math.inf
        return found

    def close(self, info: SequenceInfo) -> None:
        """Forget ``info`` (its last request was served, or a START replaces it)."""
        if self.open.get(info.id) is info:
            del self.open[info.id]
        self.stop_running(info.id)

    def stop_running(self, correlation_id: CorrelationId) -> None:
        """Close the generator of an iterative request of the sequence, if one is running
        (its ``finally`` blocks run)."""
        running = self.running.pop(correlation_id, None)
        if running is not None:
            close_parts(running[2])


def unknown_sequence_message(engine: Engine, correlation_id: CorrelationId) -> str:
    """The error of a request whose sequence is not open (INVALID_ARG)."""
    timeout = engine.sequences.idle_timeout_s if engine.sequences is not None else 0.0
    return (
        f"model '{engine.model_name}': sequence {correlation_id!r} is not open: no request with "
        f"the START flag was seen for it, or it ended (END) or was evicted after "
        f"{timeout:g} s without a request; the first request of a sequence must carry the "
        f"START flag (sequence_start=True)"
    )


def evict_idle(engine: Engine, now: float) -> None:
    """End the sequences idle for the timeout at ``now`` (``end_sequence``, evicted)."""
    store = engine.sequences
    assert store is not None
    for info in store.idle(now):
        end_sequence(engine, info, evicted=True)


def end_sequence(engine: Engine, info: SequenceInfo, *, evicted: bool) -> None:
    """Call ``end_sequence``; an exception there is logged (the request's response, if
    any, is already decided)."""
    store = engine.sequences
    assert store is not None
    info.evicted = evicted
    try:
        store.end_hook(info)
    except Exception as exc:
        engine.internal_error(exc, f"running end_sequence() of sequence {info.id!r}")


def sequence_of(engine: Engine, request: Any, now: float) -> Union[SequenceInfo, Any]:
    """The sequence of ``request`` (a new one at START), its ``start``/``end`` set from the
    request's flags; or the response of a request that belongs to none: an empty one for a
    null request, else INVALID_ARG."""
    store = engine.sequences
    assert store is not None
    correlation_id = request.correlation_id()
    flags = request.flags()
    if not flags and (correlation_id == 0 or correlation_id == ""):
        # a null request: the direct strategy fills an empty batch slot below a busy one with
        # it (no id, no flags); the server drops its response, so nothing is computed
        return engine.pb.InferenceResponse(output_tensors=[])
    info = store.open.get(correlation_id)
    if flags & SEQUENCE_START:
        if info is not None:  # the server ends the previous sequence early too
            store.close(info)
            end_sequence(engine, info, evicted=True)
        info = SequenceInfo(correlation_id, now)
        try:
            info.state = store.start_hook(info)
        except Exception as exc:
            return engine.internal_error(exc, f"running start_sequence() of {correlation_id!r}")
        store.open[correlation_id] = info
    elif info is None:
        message = unknown_sequence_message(engine, correlation_id)
        return engine.error_response(message, engine.error_codes.INVALID_ARG)
    else:
        info.start = False
        info.last_seen = now
        store.open.move_to_end(correlation_id)
    info.end = bool(flags & SEQUENCE_END)
    return info


def sequence_execute(engine: Engine) -> Callable[[Sequence[Any]], Any]:
    """A stateful model's ``execute(requests)``: :func:`execute_plain_sequences` for plain
    numpy tensors of a batched model, else :func:`execute_sequences`."""
    tables = row_tables(engine)
    if tables is None or engine.sequences is None:
        return partial(execute_sequences, engine)
    # (a partial of a module function: its arguments are the frame's fast locals)
    return partial(execute_plain_sequences, engine, engine.sequences, tables)


def execute_sequences(engine: Engine, requests: Sequence[Any]) -> Any:
    """A sequence model's ``execute``: idle sequences evicted, then each request served on
    its own with its sequence (a list of responses; None for a streaming model)."""
    store = engine.sequences
    assert store is not None
    now = store.clock()
    if now >= store.evict_at:  # (most calls evict nothing, and a call costs)
        evict_idle(engine, now)
    if not engine.traits.decoupled:
        return [serve_in_sequence(engine, index, r, now) for index, r in enumerate(requests)]
    iterative = store.iterative
    for request in requests:
        stream = Stream(engine, request)
        if iterative:
            step_iterative(engine, stream, now)
        else:
            stream_in_sequence(engine, stream, now)
    return None


def serve_in_sequence(engine: Engine, index: int, request: Any, now: float) -> Any:
    """One request of a sequence model, from its sequence to its response."""
    info = sequence_of(engine, request, now)
    if type(info) is not SequenceInfo:
        return info  # the error response
    if engine.direct_inputs is not None:  # plain inputs and outputs: the direct path
        response = engine.serve_direct(index, request, info)
    elif engine.checks_cancelled and request.is_cancelled():
        response = engine.cancelled_response()
    else:
        response = compute_in_sequence(engine, index, request, info)
    if info.end:
        finish(engine, info)
    return response


def execute_plain_sequences(
    engine: Engine, store: SequenceStore, tables: Tables, requests: Sequence[Any]
) -> List[Any]:
    """:func:`execute_sequences` for plain numpy tensors of a batched model: each request
    through ``_plain.serve_rows``, the sequence of one that continues it found here (START,
    null and unknown requests: :func:`sequence_of`). Calls that check for cancellation go
    to :func:`execute_sequences`."""
    if engine.checks_cancelled or engine.direct_inputs is None:
        return execute_sequences(engine, requests)  # type: ignore[no-any-return]
    now = store.clock()
    if now >= store.evict_at:
        evict_idle(engine, now)
    open_ = store.open
    responses: List[Any] = []
    for index, request in enumerate(requests):  # (a loop: a comprehension is a call)
        info = open_.get(request.correlation_id())
        flags = request.flags()
        if info is None or flags & SEQUENCE_START:
            info = sequence_of(engine, request, now)
            if type(info) is not SequenceInfo:
                responses.append(info)  # the error response
                continue
        else:  # (sequence_of's lines for a request that continues its sequence)
            info.start = False
            info.last_seen = now
            open_.move_to_end(info.id)
            info.end = flags & SEQUENCE_END != 0
        responses.append(serve_rows(engine, tables, index, request, info))
        if info.end:
            finish(engine, info)
    return responses


def compute_in_sequence(engine: Engine, index: int, request: Any, info: SequenceInfo) -> Any:
    """Decode the request and run ``infer`` with its sequence (errors for this request
    alone, as for a request alone)."""
    during = "decoding the inputs"
    try:
        item = engine.decode(index, request, keyed=False)
        if engine.wants_sequence:
            item.values[SEQUENCE_ARGUMENT] = info
        during = "running infer()"
        values = engine.one_values(item) if engine.reshapes_alone else item.values
        return engine.respond(item, engine.timed_infer(values))
    except InputError as exc:
        return engine.refused(exc)
    except Exception as exc:
        return engine.internal_error(exc, during)


def finish(engine: Engine, info: SequenceInfo) -> None:
    """Close a sequence whose last request was served and call ``end_sequence``."""
    store = engine.sequences
    assert store is not None
    store.close(info)
    end_sequence(engine, info, evicted=False)


def stream_in_sequence(engine: Engine, stream: Stream, now: float) -> None:
    """One request of a streaming sequence model: its parts sent as for any stream, with its
    sequence in infer's argument."""
    info = sequence_of(engine, stream.request, now)
    if type(info) is not SequenceInfo:
        stream.end_with(info)  # the error response, then FINAL
        return
    item = stream.start()
    if item is not None:
        if engine.wants_sequence:
            item.values[SEQUENCE_ARGUMENT] = info
        stream.run(item)
    if info.end:
        finish(engine, info)


def step_iterative(engine: Engine, stream: Stream, now: float) -> None:
    """One step of an iterative sequence (``iterative=True``): the request's generator
    (made at its first ``execute()``) runs to its next ``yield``, whose part is sent, and
    the request is rescheduled; when the generator returns, FINAL ends the stream and the
    sequence (the server ends an iterative sequence when its request is released)."""
    store = engine.sequences
    assert store is not None
    request = stream.request
    running = store.running.get(request.correlation_id())
    # the server hands a rescheduled request back without flags (a new object); a START
    # under the id of a running request is a new sequence
    if running is None or (request.flags() & SEQUENCE_START and running[3] is not request):
        running = begin_iterative(engine, stream, now)
        if running is None:
            return
    else:
        info = running[0]
        info.start, info.last_seen = False, now
        store.open.move_to_end(info.id)
    info, item, parts = running[:3]
    try:
        part = stream.next_part(parts)  # timed: a slow step is asked whether it was cancelled
    except StopIteration:
        stream.sender.send(flags=stream.final)
        finish(engine, info)
        return
    except Exception as exc:
        stream.end_with_error(exc)
        finish(engine, info)
        return
    if stream.cancelled():
        stream.end_cancelled()
        finish(engine, info)  # closes the generator
        return
    stream.send_part(item, part)
    request.set_release_flags(engine.pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)


def begin_iterative(engine: Engine, stream: Stream, now: float) -> Optional[Tuple[Any, ...]]:
    """The first ``execute()`` of an iterative request: its sequence, its decoded inputs
    and its generator (kept by the store until it returns); None when the request ended
    with an error."""
    store = engine.sequences
    assert store is not None
    info = sequence_of(engine, stream.request, now)
    if type(info) is not SequenceInfo:
        stream.end_with(info)
        return None
    item = stream.start()
    if item is None:
        finish(engine, info)
        return None
    if engine.wants_sequence:
        item.values[SEQUENCE_ARGUMENT] = info
    try:
        parts = engine.infer(**engine.one_values(item))
    except Exception as exc:
        stream.end_with_error(exc)
        finish(engine, info)
        return None
    running = (info, item, parts, stream.request)
    store.running[info.id] = running
    return running
