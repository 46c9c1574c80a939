"""A bounded closed-loop load generator: ``concurrency`` worker threads, each sending one
request, waiting for its answer and sending the next, for a warm-up and then a fixed
measurement window. Only requests that start and end inside the window count.

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

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import ToolError

__all__ = [
    "Caller",
    "LoadWindow",
    "Progress",
    "describe_error",
    "grpc_caller_factory",
    "http_caller_factory",
    "run_closed_loop",
]

Caller = Callable[[], None]
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
    phase: str
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

    @property
    def throughput(self) -> float:
        """Completed requests per second of the window."""
        return self.completed / self.duration_s if self.duration_s > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        """The ``q``-th latency percentile in milliseconds (NaN without samples)."""
        if not self.latencies_ms:
            return float("nan")
        return float(np.percentile(np.asarray(self.latencies_ms), q))


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
    differences; ``on_progress`` gets a :class:`Progress` every ``progress_every`` seconds
    from the calling thread. The run is bounded: every worker stops at the window's end.
    """
    if concurrency < 1 or duration <= 0 or warmup < 0:
        raise ToolError(
            f"load window: concurrency {concurrency}, duration {duration}, warmup {warmup}: "
            "expected concurrency >= 1, duration > 0 and warmup >= 0."
        )
    callers = [make_caller(index) for index in range(concurrency)]
    now = time.perf_counter
    barrier = threading.Barrier(concurrency + 1)
    window = [0.0, 0.0]
    per_worker: List[List[float]] = [[] for _ in range(concurrency)]
    completed = [0] * concurrency
    errors = [0] * concurrency
    first_error: List[str] = []

    def work(index: int) -> None:
        call, latencies = callers[index], per_worker[index]
        barrier.wait()
        begin, end = window
        streak = 0
        while True:
            t0 = now()
            if t0 >= end:
                return
            try:
                call()
            except Exception as exc:  # any failure of one request is counted, not raised
                errors[index] += 1
                streak += 1
                if not first_error:
                    first_error.append(describe_error(exc))
                if streak >= FAILURE_STREAK:
                    return
                continue
            streak = 0
            t1 = now()
            if t0 >= begin and t1 <= end:
                completed[index] += 1
                if len(latencies) < MAX_SAMPLES_PER_WORKER:
                    latencies.append((t1 - t0) * 1000.0)

    threads = [
        threading.Thread(target=work, args=(i,), name=f"tritonpy-perf-{i}", daemon=True)
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    start = now()
    window[0], window[1] = start + warmup, start + warmup + duration
    barrier.wait()

    def wait_until(deadline: float, phase: str) -> None:
        while True:
            left = deadline - now()
            if on_progress is not None:
                done = now() - start
                on_progress(
                    Progress(
                        concurrency,
                        phase,
                        min(done, warmup + duration),
                        warmup + duration,
                        sum(completed),
                        sum(errors),
                    )
                )
            if left <= 0 or not any(t.is_alive() for t in threads):
                return
            time.sleep(min(left, progress_every))

    wait_until(window[0], "warmup")
    before = sample() if sample is not None else {}
    wait_until(window[1], "measure")
    after = sample() if sample is not None else {}
    for thread in threads:
        thread.join(timeout=max(30.0, duration * 4))
    return LoadWindow(
        concurrency=concurrency,
        duration_s=duration,
        completed=sum(completed),
        errors=sum(errors),
        latencies_ms=[value for worker in per_worker for value in worker],
        first_error=first_error[0] if first_error else "",
        samples={key: after[key] - before.get(key, 0.0) for key in after},
    )


# -- gRPC --------------------------------------------------------------------------------
_CHANNEL_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


def _grpc_request(model: str, payload: Payload) -> Any:
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

    requests = [_grpc_request(model, payload) for payload in payloads]

    def make(index: int) -> Caller:
        channel = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
        infer = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer
        state = [index % len(requests)]

        def call() -> None:
            position = state[0]
            state[0] = (position + 1) % len(requests)
            infer(requests[position], timeout=timeout)

        return call

    return make


def http_caller_factory(
    address: str, model: str, payloads: Sequence[Payload], *, timeout: float = 60.0
) -> Callable[[int], Caller]:
    """``make_caller`` for :func:`run_closed_loop` over HTTP at ``address``: worker i holds
    its own tritonclient connection and the inputs of ``payloads`` built once."""
    import tritonclient.http as httpclient
    from tritonclient.utils import np_to_triton_dtype

    def build(payload: Payload) -> List[Any]:
        inputs = []
        for name, array in payload.items():
            tensor = httpclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            tensor.set_data_from_numpy(array, binary_data=True)
            inputs.append(tensor)
        return inputs

    built = [build(payload) for payload in payloads]

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
