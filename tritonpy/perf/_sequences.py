"""Load on a sequence model (``sequence_batching``), the way perf_analyzer drives one: each
worker runs sequences of ``length`` requests one after the other, a fresh correlation id for
each (from a :class:`SequenceIds` shared by the workers), START on the first request and END
on the last, one request of a sequence in flight at a time. The concurrency is the number of
sequences live at once, so the ``oldest`` strategy can merge requests of several sequences
into one batch.

When a worker stops in the middle of a sequence it sends one more request carrying END (not
counted): the sequence's slot is released at once instead of after the batcher's idle
timeout. A failed request abandons its sequence: the next request starts a fresh one.

Example::

    ids = SequenceIds(start=1)
    make = sequence_caller_factory("localhost:8001", "grpc", "seq_sum", payloads,
                                   length=20, ids=ids)
    window = run_closed_loop(make, concurrency=4, warmup=0.5, duration=2.0)
    window.sequence_rate, window.throughput
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Protocol, Sequence, Tuple, Union

from ._engine import GRPC_CHANNEL_OPTIONS, Caller, Outcome, Payload, grpc_request, http_inputs
from ._inputs import PerfInputError
from ._stream import SequenceFlags, StreamSender, set_sequence

SequenceId = Union[int, str]
#: perf_analyzer's default length of a sequence (``--sequence-length``)
DEFAULT_SEQUENCE_LENGTH = 20


class SequenceIds:
    """Fresh correlation ids for the sequences of a run: ``start``, ``start + 1``, ...; with
    ``end``, ids stay below it and start again from ``start`` (perf_analyzer's
    ``--sequence-id-range start:end``). ``string``: the ids as strings ("1", "2", ...), for a
    model whose CORRID control is ``TYPE_STRING``. Thread-safe."""

    def __init__(self, start: int = 1, end: Optional[int] = None, *, string: bool = False):
        if start < 1 or (end is not None and end <= start):
            raise PerfInputError(
                f"--sequence-id-range {start}:{'' if end is None else end}: expected "
                "START >= 1 and END > START (END excluded, or left out for no bound)."
            )
        self.start, self.end, self.string = start, end, string
        self._next = start
        self._lock = threading.Lock()

    def check(self, live: int) -> None:
        """Refuse a range too small for ``live`` sequences at once (ids would collide)."""
        if self.end is not None and self.end - self.start < live:
            raise PerfInputError(
                f"--sequence-id-range {self.start}:{self.end} holds {self.end - self.start} "
                f"id(s), fewer than the {live} sequences live at concurrency {live}: "
                "sequences would share an id. Widen the range or lower --concurrency."
            )

    def take(self) -> SequenceId:
        """The next id."""
        with self._lock:
            value = self._next
            self._next = value + 1
            if self.end is not None and self._next >= self.end:
                self._next = self.start
        return str(value) if self.string else value


@dataclass(frozen=True)
class SequenceStep:
    """One request of a sequence: its id, its place (``index`` of ``length``), the payload
    sent (``position`` in the payloads) and its flags."""

    sequence_id: SequenceId
    index: int
    length: int
    position: int

    @property
    def start(self) -> bool:
        return self.index == 0

    @property
    def end(self) -> bool:
        return self.index == self.length - 1


#: what the optional observer gets for each answered request: the step, and the server's
#: answer (gRPC: the ``ModelInferResponse``, a stream's last one; HTTP: tritonclient's result)
Observer = Callable[[SequenceStep, Any], None]


class Sender(Protocol):
    """Sends one request of a worker: ``(outcome or None, the server's answer)``."""

    def exchange(self, position: int, flags: SequenceFlags = None) -> Tuple[Any, Any]: ...

    def close(self) -> None: ...


class GrpcSender:
    """Unary gRPC requests on the worker's own channel (its own copies of the messages: the
    sequence parameters are set on them)."""

    def __init__(self, address: str, model: str, payloads: Sequence[Payload], timeout: float):
        import grpc
        from tritonclient.grpc import service_pb2_grpc

        self.channel = grpc.insecure_channel(address, options=GRPC_CHANNEL_OPTIONS)
        self.infer = service_pb2_grpc.GRPCInferenceServiceStub(self.channel).ModelInfer
        self.requests = [grpc_request(model, payload) for payload in payloads]
        self.timeout = timeout

    def exchange(self, position: int, flags: SequenceFlags = None) -> Tuple[Any, Any]:
        request = self.requests[position]
        set_sequence(request, flags)
        return None, self.infer(request, timeout=self.timeout)

    def close(self) -> None:
        self.channel.close()


class HttpSender:
    """HTTP requests through the worker's own tritonclient connection."""

    def __init__(self, address: str, model: str, payloads: Sequence[Payload], timeout: float):
        import tritonclient.http as httpclient

        self.client = httpclient.InferenceServerClient(
            address, connection_timeout=timeout, network_timeout=timeout
        )
        self.model = model
        self.inputs = [http_inputs(payload) for payload in payloads]

    def exchange(self, position: int, flags: SequenceFlags = None) -> Tuple[Any, Any]:
        sequence_id, start, end = flags if flags is not None else (0, False, False)
        answer = self.client.infer(
            self.model, self.inputs[position], sequence_id=sequence_id,
            sequence_start=start, sequence_end=end,
        )  # fmt: skip
        return None, answer

    def close(self) -> None:
        self.client.close()


class SequenceCaller:
    """A worker's caller: each call sends the next request of its current sequence."""

    def __init__(
        self, sender: Sender, count: int, length: int, ids: SequenceIds, offset: int,
        observe: Optional[Observer] = None,
    ) -> None:  # fmt: skip
        self.sender, self.count, self.length, self.ids = sender, count, length, ids
        self.position = offset % count
        self.observe = observe
        self.sequence_id: SequenceId = 0
        self.index = 0

    def _step(self) -> SequenceStep:
        if self.index == 0:
            self.sequence_id = self.ids.take()
        step = SequenceStep(self.sequence_id, self.index, self.length, self.position)
        self.position = (self.position + 1) % self.count
        return step

    def _send(self, step: SequenceStep, end: bool) -> Tuple[Any, Any]:
        flags = (step.sequence_id, step.start, end)
        try:
            found = self.sender.exchange(step.position, flags)
        except Exception:
            self.index = 0  # the sequence is abandoned: the next request starts a new one
            raise
        self.index = 0 if end else step.index + 1
        return found

    def __call__(self) -> Outcome:
        step = self._step()
        found, answer = self._send(step, step.end)
        if self.observe is not None:
            self.observe(step, answer)
        outcome: Optional[Outcome] = found
        if outcome is None:
            return Outcome(ended_sequence=step.end)
        return replace(outcome, ended_sequence=step.end)

    def finish(self) -> None:
        """End the sequence in progress (one request with END, not counted), then close the
        worker's connection."""
        try:
            if self.index > 0:
                step = self._step()
                self._send(step, True)
        finally:
            self.sender.close()


def sequence_caller_factory(
    address: str,
    protocol: str,
    model: str,
    payloads: Sequence[Payload],
    *,
    length: int,
    ids: SequenceIds,
    streaming: bool = False,
    timeout: float = 60.0,
    observe: Optional[Observer] = None,
) -> Callable[[int], Caller]:
    """``make_caller`` for :func:`~tritonpy.perf._engine.run_closed_loop` on a sequence model:
    worker i runs sequences of ``length`` requests (``payloads`` in rotation from offset i)
    over ``protocol`` (``grpc`` or ``http``; ``streaming``: a gRPC stream, for a decoupled
    sequence model). ``observe(step, answer)`` sees every answered request (tests check the
    model's state with it)."""
    if length < 1:
        raise PerfInputError(f"--sequence-length {length}: expected a positive number of requests.")

    def make(index: int) -> Caller:
        sender: Sender
        if streaming:
            sender = StreamSender(address, model, payloads, timeout)
        elif protocol == "grpc":
            sender = GrpcSender(address, model, payloads, timeout)
        else:
            sender = HttpSender(address, model, payloads, timeout)
        return SequenceCaller(sender, len(payloads), length, ids, index, observe)

    return make
