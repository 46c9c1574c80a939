"""A bounded closed-loop load generator: ``concurrency`` worker threads, each sending one
request, waiting for its answer and sending the next, for a warm-up and then a fixed
measurement window. The requests that end inside the window count (in a steady closed loop
that is the window's throughput, with no bias at its edges).

Each worker owns its connection and requests built once (gRPC: the generated protobuf
messages sent on a raw channel; HTTP: tritonclient's ``InferInput`` objects), so the client
spends little of the CPUs it shares with a local server; the calls release the GIL while they
wait.

Example::

    make = grpc_caller_factory("localhost:8001", "add_sub", payloads)
    window = run_closed_loop(make, concurrency=4, warmup=0.5, duration=2.0)
    window.throughput, window.percentile_ms(99)
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import ToolError


@dataclass(frozen=True)
class Outcome:
    """What a caller may return for one request besides its latency: ``responses`` it
    received (a decoupled model's stream; 1 for a plain request), ``first_at``: the
    ``time.perf_counter()`` of its first response (None when there was none), and
    ``ended_sequence``: the request carried a sequence's END flag."""

    responses: int = 1
    first_at: Optional[float] = None
    ended_sequence: bool = False


#: sends one request and raises on failure; may return an :class:`Outcome`. A caller with a
#: ``finish()`` attribute has it called once when its worker stops (a sequence ends there)
Caller = Callable[[], Optional[Outcome]]
#: the part of a load window a :class:`Progress` event is about
Phase = Literal["warmup", "measure"]
Payload = Mapping[str, NDArray[Any]]
#: a worker stops after this many failures in a row: a broken model does not spin forever
FAILURE_STREAK = 100
#: latencies kept per worker (memory stays bounded on long windows)
MAX_SAMPLES_PER_WORKER = 200_000


@dataclass(frozen=True)
class Progress:
    """A progress event of one window: ``phase`` ``"warmup"`` or ``"measure"``, seconds done
    and total, requests completed in the window so far, errors so far."""

    concurrency: int
    phase: Phase
    elapsed_s: float
    total_s: float
    completed: int
    errors: int


@dataclass
class LoadWindow:
    """What one measurement window produced."""

    concurrency: int
    duration_s: float
    completed: int
    errors: int
    latencies_ms: List[float] = field(repr=False, default_factory=list)
    first_error: str = ""
    #: ``sample()`` differences between the window's end and start (e.g. CPU seconds)
    samples: Dict[str, float] = field(default_factory=dict)
    #: responses received by the completed requests (streams: all of a stream's responses)
    responses: int = 0
    #: milliseconds from sending to the first response, of completed requests that had one
    first_ms: List[float] = field(repr=False, default_factory=list)
    #: sequences whose END request completed inside the window
    sequences: int = 0

    @property
    def throughput(self) -> float:
        """Completed requests per second of the window."""
        return self._rate(self.completed)

    @property
    def response_rate(self) -> float:
        """Responses per second of the window."""
        return self._rate(self.responses)

    @property
    def sequence_rate(self) -> float:
        """Sequences completed per second of the window."""
        return self._rate(self.sequences)

    def _rate(self, count: int) -> float:
        return count / self.duration_s if self.duration_s > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        """The ``q``-th latency percentile in milliseconds (NaN without samples)."""
        return _percentile(self.latencies_ms, q)

    def first_percentile_ms(self, q: float) -> float:
        """The ``q``-th percentile of the time to first response (NaN without samples)."""
        return _percentile(self.first_ms, q)


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values), q))


def finish_caller(call: Caller) -> None:
    """Run the caller's ``finish()``, if it has one; its failure is ignored (after the
    window, nothing is counted any more)."""
    finish = getattr(call, "finish", None)
    if callable(finish):
        with contextlib.suppress(Exception):
            finish()


def describe_error(exc: BaseException) -> str:
    """One line for a failed request: gRPC's status and details, tritonclient's message, or
    the exception's type and text."""
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if callable(code) and callable(details):  # grpc.RpcError
        return f"{code()}: {details()}"
    message = getattr(exc, "message", None)
    if callable(message):  # tritonclient's InferenceServerException
        return f"{type(exc).__name__}: {message()}"
    return f"{type(exc).__name__}: {exc}"


class _ClosedLoop:
    """The shared state of one window's workers: each keeps its own latencies and counts (no
    lock on the hot path); the window's bounds are set before the barrier releases them."""

    def __init__(self, callers: Sequence[Caller]) -> None:
        count = len(callers)
        self.callers = list(callers)
        self.barrier = threading.Barrier(count + 1)
        self.begin = self.end = 0.0
        self.latencies: List[List[float]] = [[] for _ in range(count)]
        self.completed = [0] * count
        self.errors = [0] * count
        self.responses = [0] * count
        self.sequences = [0] * count
        self.first_ms: List[List[float]] = [[] for _ in range(count)]
        self.first_error: List[str] = []

    def work(self, index: int) -> None:
        """Worker ``index``: send, wait, send again until the window's end; a streak of
        :data:`FAILURE_STREAK` failures stops it early. The caller's ``finish()``, if any,
        runs when the worker stops."""
        try:
            self._loop(index)
        finally:
            finish_caller(self.callers[index])

    def _loop(self, index: int) -> None:
        call, latencies, now = self.callers[index], self.latencies[index], time.perf_counter
        self.barrier.wait()
        begin, end = self.begin, self.end
        streak = 0
        while streak < FAILURE_STREAK:
            t0 = now()
            if t0 >= end:
                return
            try:
                outcome = call()
            except Exception as exc:  # any failure of one request is counted, not raised
                self.errors[index] += 1
                streak += 1
                if not self.first_error:
                    self.first_error.append(describe_error(exc))
                continue
            streak = 0
            t1 = now()
            # a request counts where it ends: in a steady closed loop as many start before the
            # window and end inside it as start inside and end after it, so counting those
            # that end inside is unbiased; counting only those that start and end inside
            # would leave out about one request per worker at each edge (a few percent of a
            # short window at tens of milliseconds per request)
            if begin <= t1 <= end:
                self.completed[index] += 1
                if len(latencies) < MAX_SAMPLES_PER_WORKER:
                    latencies.append((t1 - t0) * 1000.0)
                if outcome is None:
                    self.responses[index] += 1
                else:
                    self._count(index, t0, outcome)

    def _count(self, index: int, t0: float, outcome: Outcome) -> None:
        self.responses[index] += outcome.responses
        self.sequences[index] += outcome.ended_sequence
        first = self.first_ms[index]
        if outcome.first_at is not None and len(first) < MAX_SAMPLES_PER_WORKER:
            first.append((outcome.first_at - t0) * 1000.0)

    def progress(self, concurrency: int, phase: Phase, elapsed: float, total: float) -> Progress:
        return Progress(
            concurrency, phase, min(elapsed, total), total, sum(self.completed), sum(self.errors)
        )

    def window(self, duration: float, samples: Dict[str, float]) -> LoadWindow:
        return LoadWindow(
            concurrency=len(self.callers),
            duration_s=duration,
            completed=sum(self.completed),
            errors=sum(self.errors),
            latencies_ms=[value for worker in self.latencies for value in worker],
            first_error=self.first_error[0] if self.first_error else "",
            samples=samples,
            responses=sum(self.responses),
            first_ms=[value for worker in self.first_ms for value in worker],
            sequences=sum(self.sequences),
        )


def run_closed_loop(
    make_caller: Callable[[int], Caller],
    *,
    concurrency: int,
    warmup: float,
    duration: float,
    sample: Optional[Callable[[], Mapping[str, float]]] = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
    progress_every: float = 0.25,
) -> LoadWindow:
    """Run ``concurrency`` workers (``make_caller(i)`` gives worker i a callable that sends one
    request and raises on failure) for ``warmup`` then ``duration`` seconds.

    ``sample()`` is called at the window's start and end and the result holds the
    differences (for the keys of the end's sample); ``on_progress`` gets a :class:`Progress`
    every ``progress_every`` seconds from the calling thread. The run is bounded: every
    worker stops at the window's end.
    """
    if concurrency < 1 or duration <= 0 or warmup < 0:
        raise ToolError(
            f"load window: concurrency {concurrency}, duration {duration}, warmup {warmup}: "
            "expected concurrency >= 1, duration > 0 and warmup >= 0."
        )
    loop = _ClosedLoop([make_caller(index) for index in range(concurrency)])
    threads = [
        threading.Thread(target=loop.work, args=(i,), name=f"tritonpy-perf-{i}", daemon=True)
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    now = time.perf_counter
    start, total = now(), warmup + duration
    loop.begin, loop.end = start + warmup, start + total
    loop.barrier.wait()

    def wait_until(deadline: float, phase: Phase) -> None:
        while True:
            left = deadline - now()
            if on_progress is not None:
                on_progress(loop.progress(concurrency, phase, now() - start, total))
            if left <= 0 or not any(t.is_alive() for t in threads):
                return
            time.sleep(min(left, progress_every))

    wait_until(loop.begin, "warmup")
    before = sample() if sample is not None else {}
    wait_until(loop.end, "measure")
    after = sample() if sample is not None else {}
    for thread in threads:
        thread.join(timeout=max(30.0, duration * 4))
    return loop.window(duration, {key: after[key] - before.get(key, 0.0) for key in after})


# -- gRPC --------------------------------------------------------------------------------
#: no message size limit: large tensors pass as they would with tritonclient
GRPC_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
]


def grpc_request(model: str, payload: Payload) -> Any:
    """A ``ModelInferRequest`` for ``model`` carrying ``payload`` as raw contents (BYTES
    tensors serialized the way tritonclient does); every output is returned."""
    from tritonclient.grpc import service_pb2
    from tritonclient.utils import np_to_triton_dtype, serialize_byte_tensor

    request = service_pb2.ModelInferRequest(model_name=model)
    for name, array in payload.items():
        tensor = request.inputs.add()
        tensor.name = name
        tensor.datatype = np_to_triton_dtype(array.dtype)
        tensor.shape.extend(int(d) for d in array.shape)
        if array.dtype == np.object_:
            serialized = serialize_byte_tensor(array)
            request.raw_input_contents.append(serialized.item() if serialized.size else b"")
        else:
            request.raw_input_contents.append(np.ascontiguousarray(array).tobytes())
    return request


def grpc_caller_factory(
    address: str, model: str, payloads: Sequence[Payload], *, timeout: float = 60.0
) -> Callable[[int], Caller]:
    """``make_caller`` for :func:`run_closed_loop` over gRPC at ``address`` (``host:port``):
    worker i opens its own channel and sends ``payloads`` in rotation, from offset i."""
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    requests = [grpc_request(model, payload) for payload in payloads]

    def make(index: int) -> Caller:
        channel = grpc.insecure_channel(address, options=GRPC_CHANNEL_OPTIONS)
        infer = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer
        state = [index % len(requests)]

        def call() -> None:
            position = state[0]
            state[0] = (position + 1) % len(requests)
            infer(requests[position], timeout=timeout)

        return call

    return make


def http_inputs(payload: Payload) -> List[Any]:
    """tritonclient's HTTP ``InferInput`` objects for ``payload`` (binary tensors)."""
    import tritonclient.http as httpclient
    from tritonclient.utils import np_to_triton_dtype

    inputs = []
    for name, array in payload.items():
        tensor = httpclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        tensor.set_data_from_numpy(array, binary_data=True)
        inputs.append(tensor)
    return inputs


def http_caller_factory(
    address: str, model: str, payloads: Sequence[Payload], *, timeout: float = 60.0
) -> Callable[[int], Caller]:
    """``make_caller`` for :func:`run_closed_loop` over HTTP at ``address``: worker i holds
    its own tritonclient connection and the inputs of ``payloads`` built once."""
    import tritonclient.http as httpclient

    built = [http_inputs(payload) for payload in payloads]

    def make(index: int) -> Caller:
        client = httpclient.InferenceServerClient(
            address, connection_timeout=timeout, network_timeout=timeout
        )
        state = [index % len(built)]

        def call() -> None:
            position = state[0]
            state[0] = (position + 1) % len(built)
            client.infer(model, built[position])

        return call

    return make
