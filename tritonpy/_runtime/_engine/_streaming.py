"""The engine's ``execute`` for a streaming (decoupled) model: ``infer`` yields one dict per
response.

Each request gets its own generator (streams are never merged across requests; with
``max_batch_size > 0`` values keep their row dimension). Every yielded part is encoded and
checked like a plain result and sent at once through the request's response sender without
the FINAL flag (a model whose outputs are all plain numpy tensors has its parts checked and
wrapped in the sending loop itself, as the plain-tensor path does: a token generator pays
that per token); when the generator ends, a flags-only FINAL response closes the stream.
That last response carries no outputs, so a client sees exactly one response per ``yield``
(gRPC streaming without ``enable_empty_final_response``, HTTP ``generate_stream``), and the
first part is never held back to learn whether it is the last.

Ends of a stream other than the generator's end, each one error response after the parts
already sent, then the flags-only FINAL (an error flagged FINAL itself never reaches a BLS
caller in 24.10: its stream would never end):

* a bad input: ``INVALID_ARG`` (nothing computed);
* ``InputError`` raised by ``infer``: ``INVALID_ARG``; any other exception: ``INTERNAL``;
* the client cancelled: checked before a part is sent (after the generator produced it, so a
  cancellation that arrives while a slow part is computed is seen before sending it); the
  generator is closed (its ``finally`` blocks run: it is suspended at the ``yield`` of the
  part that is not sent) and the stream ends with ``CANCELLED``. Each check is a round trip
  to the server, so ``check_cancellation = "auto"`` (the default) asks before a part only
  when the generator spent :data:`AUTO_CANCELLATION_SECONDS` (2 ms) or more producing the
  parts since the last check, or :data:`STREAM_CHECK_INTERVAL_SECONDS` passed: every part of
  a stream whose parts take 2 ms or more to produce (a token generator), as ``True`` does,
  and a fast stream once per 0.1 s. Sent parts do not count: each send is itself a round
  trip, and a check before every part of a fast stream (benchmarks/run.py's stream
  workload, 16 parts of microseconds) would double the stub's round trips to the server.

An ``async def infer`` that yields works the same; ``execute`` then returns a coroutine that
Triton runs in the background on its event loop (decoupled async execute, 24.04+).
"""

from __future__ import annotations

import asyncio
import inspect
from functools import partial
from time import perf_counter
from types import GeneratorType
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Sequence

import numpy as np

from .._declarations import INFER_ASYNC, INFER_ASYNC_GENERATOR
from ..errors import InputError
from ._decoded import Decoded
from ._plain import Tables, plain_tables, read_plain
from ._traits import AUTO_CANCELLATION_SECONDS

#: with check_cancellation = "auto", a fast stream is still asked this often (wall time)
STREAM_CHECK_INTERVAL_SECONDS = 0.1

if TYPE_CHECKING:
    from .engine import Engine


def cancelled_message(sent: int) -> str:
    """The message of the CANCELLED response that ends a stream its client cancelled."""
    return (
        f"request cancelled by the client after {sent} streamed response(s); the model "
        f"stopped its stream"
    )


def decoupled_execute(engine: Engine) -> Callable[[Sequence[Any]], Any]:
    """``execute()`` of a streaming model, chosen once at ``initialize``: an async ``infer``'s
    (a coroutine), else one that streams each request in turn (:func:`execute_decoupled`),
    its plain numpy inputs read as the plain-tensor path reads them."""
    if engine.traits.infer_kind in (INFER_ASYNC, INFER_ASYNC_GENERATOR):
        return partial(_stream_all_async, engine)
    # (the plain-tensor path's tables when every input and output is a plain numpy tensor)
    return partial(execute_decoupled, engine, plain_tables(engine))


def execute_decoupled(engine: Engine, tables: Optional[Tables], requests: Sequence[Any]) -> None:
    """Stream every request's responses through its sender (``tables``: see
    :func:`~._plain.plain_tables`). A request whose inputs the plain read does not take (a missing,
    unknown or wrong input, fewer outputs requested) is decoded by the codecs, which word
    the errors."""
    fewer = engine.may_request_fewer
    for request in requests:
        stream = Stream(engine, request)
        if tables is not None and (not fewer or engine.requested_of(request) is None):
            read = read_plain(tables, request.inputs(), engine.batched)
            if read is not None:
                stream.run_plain(tables, *read)
                continue
        item = stream.start()
        if item is not None:
            stream.run(item)
    return None


async def _stream_all_async(engine: Engine, requests: Sequence[Any]) -> None:
    streams = [Stream(engine, request) for request in requests]
    await asyncio.gather(*(stream.run_async() for stream in streams))


class Stream:
    """One request's stream: its sender, how many parts went out, how it ends."""

    def __init__(self, engine: Engine, request: Any) -> None:
        self.engine = engine
        self.request = request
        self.sender = request.get_response_sender()
        self.final = engine.pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        self.sent = 0
        #: the decoded request (None while a request read by the plain path streams)
        self.item: Optional[Decoded] = None
        #: what the plain read took (see run_plain)
        self.tables: Optional[Tables] = None
        self.arguments: List[Any] = []
        # the "auto" policy's clocks: when the client was last asked whether it cancelled,
        # and the seconds the generator spent producing parts since then
        self.checked_at = perf_counter()
        self.producing = 0.0

    def start(self) -> Optional[Decoded]:
        """Decode the request; on a bad input send the error (FINAL) and return None."""
        engine = self.engine
        try:
            return engine.decode(0, self.request)
        except InputError as exc:
            self.end_with(engine.refused(exc))
        except Exception as exc:
            self.end_with(engine.internal_error(exc, "decoding the inputs"))
        return None

    def run(self, item: Decoded) -> None:
        """Stream the parts of ``infer`` for the decoded request ``item``."""
        self.item = item
        self.stream(self.infer_decoded, (), item.rows if self.engine.batched else -1)

    def infer_decoded(self) -> Any:
        """``infer`` called with the decoded request's values (inside :meth:`stream`'s
        ``try``: preparing them may fail too)."""
        engine = self.engine
        assert self.item is not None
        return engine.infer(**engine.one_values(self.item))

    def run_plain(self, tables: Tables, arguments: List[Any], rows: int) -> None:
        """Stream the parts of ``infer(*arguments)``: a request read by the plain-tensor
        path (``rows``: a batched model's rows, -1 without batching)."""
        self.tables, self.arguments = tables, arguments
        self.stream(tables[2], arguments, rows)

    def stream(self, infer: Callable[..., Any], arguments: Any, rows: int) -> None:
        """Call ``infer(*arguments)``, send each part it yields, then the flags-only FINAL
        (or the error or cancellation that ends the stream)."""
        parts: Any = None
        try:
            started = perf_counter()
            parts = infer(*arguments)
            if type(parts) is not GeneratorType:
                parts = iter((parts,))  # decoupled = True with a plain infer: one part
                self.producing += perf_counter() - started
            if not self.send_parts(parts, rows):
                close_parts(parts)
                self.end_cancelled()
                return
        except Exception as exc:
            close_parts(parts)
            self.end_with_error(exc)
            return
        self.sender.send(flags=self.final)

    def send_parts(self, parts: Iterator[Any], rows: int) -> bool:
        """Send each part of ``parts`` as it comes; False when the client cancelled.

        A token stream runs this loop per token, so it is written out: the "auto" policy's
        clocks and the count of parts sent in locals, and a part whose every output is a
        plain numpy array of its declared data type and shape made into its response here,
        as the plain-tensor path does (``_plain.py``). Anything else (a conversion, a
        Response, fewer outputs requested, a wrong part) goes to ``engine.respond``, which
        words the errors."""
        engine = self.engine
        item = self.item
        policy, send = engine.check_cancellation, self.sender.send
        table = engine.part_outputs if item is None or item.requested is None else None
        outputs = table or ()
        count = len(outputs) if table else -1
        Tensor, InferenceResponse = engine.pb.Tensor, engine.pb.InferenceResponse
        checked_at, producing, sent = self.checked_at, self.producing, self.sent
        try:
            started = perf_counter()
            for part in parts:
                now = perf_counter()
                producing += now - started
                if policy is not False and (
                    policy
                    or producing >= AUTO_CANCELLATION_SECONDS
                    or now - checked_at >= STREAM_CHECK_INTERVAL_SECONDS
                ):  # "auto" and fast parts: a round trip each would cost more than it saves
                    checked_at, producing = now, 0.0
                    if self.sender.is_cancelled():
                        return False
                arrays: List[Any] = []
                for name, dtype, dims, rank, fits in outputs if type(part) is dict else ():
                    value = part.get(name)
                    shape = value.shape if type(value) is np.ndarray else None
                    if shape is None or (value.dtype is not dtype and value.dtype != dtype):
                        break
                    if rows >= 0:  # a batched model's part keeps the rows of its request
                        if not shape or shape[0] != rows:
                            break
                        shape = shape[1:]
                    if (
                        shape != dims
                        if dims is not None
                        else len(shape) != rank or (fits is not None and not fits(shape))
                    ):
                        break
                    arrays.append(Tensor(name, value))
                if len(arrays) == count == len(part):
                    send(InferenceResponse(output_tensors=arrays))
                else:  # (a plain read's request decoded once, for its first such part)
                    item = item or self.plain_item(rows)
                    send(engine.respond(item, part))
                sent += 1
                started = perf_counter()
            return True
        finally:
            self.sent = sent

    def plain_item(self, rows: int) -> Decoded:
        """The request the plain read took, as the codecs' paths take it (for a part that
        :meth:`send_parts` does not make into a response itself)."""
        assert self.tables is not None
        arguments = self.arguments
        values = {name: arguments[spec[0]] for name, spec in self.tables[0].items()}
        self.item = Decoded(0, values, max(rows, 0), None, ())
        return self.item

    async def run_async(self) -> None:
        item = self.start()
        if item is None:
            return
        engine = self.engine
        parts: Any = None
        try:
            produced = engine.infer(**engine.one_values(item))
            if inspect.isasyncgen(produced):
                parts = produced
            else:
                value = await produced if inspect.isawaitable(produced) else produced
                parts = _one_part(value)
            while True:
                try:
                    started = perf_counter()
                    part = await parts.__anext__()
                    self.producing += perf_counter() - started
                except StopAsyncIteration:
                    break
                if self.cancelled():
                    await parts.aclose()
                    self.end_cancelled()
                    return
                self.send_part(item, part)
        except Exception as exc:
            if parts is not None:
                await parts.aclose()
            self.end_with_error(exc)
            return
        self.sender.send(flags=self.final)

    def next_part(self, parts: Any) -> Any:
        """The generator's next part (StopIteration at its end), its time counted for the
        "auto" cancellation checks."""
        started = perf_counter()
        part = next(parts)
        self.producing += perf_counter() - started
        return part

    def cancelled(self) -> bool:
        """Whether the client cancelled the stream, asked as ``check_cancellation`` says:
        always, never, or ("auto") once the generator produced parts for
        :data:`AUTO_CANCELLATION_SECONDS` or :data:`STREAM_CHECK_INTERVAL_SECONDS` passed
        since the last time it was asked (:meth:`send_parts` writes the same test out)."""
        policy = self.engine.check_cancellation
        if policy is False:
            return False
        now = perf_counter()
        if policy is None and (
            self.producing < AUTO_CANCELLATION_SECONDS
            and now - self.checked_at < STREAM_CHECK_INTERVAL_SECONDS
        ):
            return False  # fast parts: a round trip each would cost more than it saves
        self.checked_at, self.producing = now, 0.0
        return bool(self.sender.is_cancelled())

    def send_part(self, item: Decoded, part: Any) -> None:
        self.sender.send(self.engine.respond(item, part))
        self.sent += 1

    def end_with_error(self, exc: Exception) -> None:
        engine = self.engine
        if isinstance(exc, InputError):
            response = engine.refused(exc)
        else:
            response = engine.internal_error(exc, "running infer()")
        self.end_with(response)

    def end_cancelled(self) -> None:
        engine = self.engine
        self.end_with(
            engine.error_response(cancelled_message(self.sent), engine.error_codes.CANCELLED)
        )

    def end_with(self, response: Any) -> None:
        # The error goes out as a response of its own and a flags-only FINAL closes the stream:
        # Triton 24.10 never delivers an error response flagged FINAL to a BLS caller
        # iterating the stream (call_stream would wait forever); clients see the same error.
        self.sender.send(response)
        self.sender.send(flags=self.final)


def close_parts(parts: Any) -> None:
    close = getattr(parts, "close", None)
    if close is not None:
        close()


async def _one_part(value: Any) -> Any:
    yield value
