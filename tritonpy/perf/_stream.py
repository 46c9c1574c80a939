"""Load on a decoupled model: each worker holds one gRPC bidirectional stream
(``ModelStreamInfer``) and sends its next request when the previous one's final response
arrived (``triton_enable_empty_final_response``: the server flags the end of every request,
even one that sent no response). A request's latency runs from sending it to its final flag;
the time of its first response is returned as an :class:`~tritonpy.perf._engine.Outcome`.

An error response inside the stream ends that request (the server flags it final) and is
raised as :class:`StreamResponseError`: the engine counts it as an error. A broken stream (the
server went away, a response that never came within ``timeout``) is reopened on the next
request.

Example::

    make = stream_caller_factory("localhost:8001", "square", payloads)
    window = run_closed_loop(make, concurrency=2, warmup=0.5, duration=2.0)
    window.response_rate, window.first_percentile_ms(50)
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Optional, Sequence, Tuple

from ._engine import GRPC_CHANNEL_OPTIONS, Caller, Outcome, Payload, grpc_request

#: the response parameter that flags a request's last response
FINAL_PARAMETER = "triton_final_response"
#: the request parameter that asks for a flags-only final response (decoupled models)
ENABLE_EMPTY_FINAL = "triton_enable_empty_final_response"
#: what the reader thread puts in the queue when the stream ends or breaks
_CLOSED = object()
#: a request's sequence: (correlation id, START, END), or None outside a sequence
SequenceFlags = Optional[Tuple[Any, bool, bool]]


class StreamResponseError(Exception):
    """An error response inside a stream: the model's or the server's message."""


class StreamBrokenError(Exception):
    """The stream closed or went silent before a request's final response."""


def set_sequence(request: Any, flags: SequenceFlags) -> None:
    """Set (or clear) a ``ModelInferRequest``'s sequence parameters: ``sequence_id`` (an
    int64 or a string parameter), ``sequence_start`` and ``sequence_end``."""
    params = request.parameters
    if flags is None:
        for key in ("sequence_id", "sequence_start", "sequence_end"):
            if key in params:
                del params[key]
        return
    sequence_id, start, end = flags
    if isinstance(sequence_id, str):
        params["sequence_id"].string_param = sequence_id
    else:
        params["sequence_id"].int64_param = int(sequence_id)
    params["sequence_start"].bool_param = bool(start)
    params["sequence_end"].bool_param = bool(end)


class StreamSender:
    """One worker's stream: :meth:`send` sends one request and waits for its final
    response. The stream opens on the first request and reopens after it broke."""

    def __init__(self, address: str, model: str, payloads: Sequence[Payload], timeout: float):
        import grpc
        from tritonclient.grpc import service_pb2_grpc

        self.timeout = timeout
        self.requests = [grpc_request(model, payload) for payload in payloads]
        for number, request in enumerate(self.requests):
            request.parameters[ENABLE_EMPTY_FINAL].bool_param = True
            request.id = f"perf-{number}"
        self.channel = grpc.insecure_channel(address, options=GRPC_CHANNEL_OPTIONS)
        self.stub = service_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        self.outbox: Optional[queue.Queue[Any]] = None
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.call: Any = None

    def _open(self) -> None:
        outbox: queue.Queue[Any] = queue.Queue()
        inbox: queue.Queue[Any] = queue.Queue()
        call = self.stub.ModelStreamInfer(iter(outbox.get, None))

        def read() -> None:
            try:
                for message in call:
                    inbox.put(message)
            except Exception as exc:  # the stream broke (or was cancelled): the sender sees it
                inbox.put(exc)
            inbox.put(_CLOSED)

        threading.Thread(target=read, name="tritonpy-perf-stream", daemon=True).start()
        self.outbox, self.inbox, self.call = outbox, inbox, call

    def close(self) -> None:
        """End the stream (the requests of the window have all been answered) and the
        channel."""
        if self.outbox is not None:
            self.outbox.put(None)
            self.outbox = None
        if self.call is not None:
            self.call.cancel()
            self.call = None
        self.channel.close()

    def _reset(self) -> None:
        if self.call is not None:
            self.call.cancel()
        self.outbox = self.call = None

    def send(self, position: int) -> Outcome:
        """Send request ``position`` and read its responses up to the final one."""
        return self.exchange(position)[0]

    def exchange(self, position: int, flags: SequenceFlags = None) -> Tuple[Outcome, Any]:
        """Send request ``position`` (with ``flags`` when it belongs to a sequence) and read
        its responses up to the final one: the outcome, and the last response message."""
        if self.outbox is None:
            self._open()
        assert self.outbox is not None
        request = self.requests[position]
        set_sequence(request, flags)
        self.outbox.put(request)
        try:
            outcome, last = self._collect()
        except StreamBrokenError:
            self._reset()
            raise
        return outcome, last

    def _collect(self) -> Tuple[Outcome, Any]:
        responses, first_at, last = 0, None, None
        now = time.perf_counter
        while True:
            try:
                message = self.inbox.get(timeout=self.timeout)
            except queue.Empty:
                raise StreamBrokenError(
                    f"no final response within {self.timeout:g} s; does the model send "
                    "one (flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL)?"
                ) from None
            if message is _CLOSED or isinstance(message, Exception):
                raise StreamBrokenError(f"the stream closed: {message}")
            if message.error_message:
                raise StreamResponseError(message.error_message)
            response = message.infer_response
            if response.outputs:
                responses, last = responses + 1, response
                if first_at is None:
                    first_at = now()
            param = response.parameters.get(FINAL_PARAMETER)
            if param is not None and param.bool_param:
                return Outcome(responses=responses, first_at=first_at), last


def stream_caller_factory(
    address: str, model: str, payloads: Sequence[Payload], *, timeout: float = 60.0
) -> Callable[[int], Caller]:
    """``make_caller`` for :func:`~tritonpy.perf._engine.run_closed_loop` on a decoupled
    model at ``address``: worker i opens its own stream and sends ``payloads`` in rotation,
    from offset i; the stream closes when the worker stops."""

    def make(index: int) -> Caller:
        sender = StreamSender(address, model, payloads, timeout)
        state = [index % len(payloads)]

        def call() -> Optional[Outcome]:
            position = state[0]
            state[0] = (position + 1) % len(payloads)
            return sender.send(position)

        call.finish = sender.close  # type: ignore[attr-defined]
        return call

    return make
