"""A bounded closed-loop load generator: ``concurrency`` workers, each sending one request,
waiting for its response, sending the next; a warm-up, then a fixed measurement window.

The workers are threads. For gRPC each holds its own channel and a request message built once
(``tritonclient``'s generated protobuf stubs, no compression), so the client spends as little
of the shared CPUs as possible per request; the call releases the GIL while it waits.

Example::

    stats = run_closed_loop(lambda worker: grpc_caller(url, "add_sub_raw", payloads),
                            concurrency=4, warmup=1.0, duration=3.0)
    stats.throughput, stats.p50_ms, stats.p99_ms
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "LoadResult",
    "build_request",
    "grpc_caller",
    "grpc_infer_once",
    "run_closed_loop",
    "wait_model_ready",
]

#: at most this many latencies are kept per worker (a 3 s window at 10k infer/s fits)
MAX_SAMPLES_PER_WORKER = 200_000
Caller = Callable[[], None]


@dataclass
class LoadResult:
    """What one measurement window produced."""

    concurrency: int
    duration_s: float
    completed: int
    errors: int
    latencies_ms: List[float] = field(repr=False)
    first_error: str = ""
    #: CPU seconds sampled by the ``sample`` callback at the window's start and end
    samples: Dict[str, float] = field(default_factory=dict)

    @property
    def throughput(self) -> float:
        return self.completed / self.duration_s if self.duration_s > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        return float(np.percentile(np.asarray(self.latencies_ms), q))

    @property
    def p50_ms(self) -> float:
        return self.percentile_ms(50)

    @property
    def p99_ms(self) -> float:
        return self.percentile_ms(99)


def run_closed_loop(
    make_caller: Callable[[int], Caller],
    *,
    concurrency: int,
    warmup: float,
    duration: float,
    sample: Optional[Callable[[], Mapping[str, float]]] = None,
    max_samples: int = MAX_SAMPLES_PER_WORKER,
) -> LoadResult:
    """Run ``concurrency`` workers (``make_caller(i)`` gives worker i a callable that performs
    one request and raises on failure) for ``warmup`` seconds, then ``duration`` seconds.

    Only requests that start and finish inside the measurement window count. ``sample()`` is
    called right at the window's start and end (e.g. CPU counters); the result holds the
    differences. Each worker stops after a failure streak of 100 (a broken server does not
    spin forever) and every worker stops at the window's end, so the run is bounded in time.
    """
    if concurrency < 1 or duration <= 0 or warmup < 0:
        raise ValueError("concurrency >= 1, duration > 0 and warmup >= 0 are required")
    callers = [make_caller(index) for index in range(concurrency)]
    start_barrier = threading.Barrier(concurrency + 1)
    now = time.perf_counter
    window: List[float] = [0.0, 0.0]  # set by the main thread before the barrier releases
    per_worker: List[List[float]] = [[] for _ in range(concurrency)]
    completed = [0] * concurrency
    errors = [0] * concurrency
    first_error: List[str] = []

    def work(index: int) -> None:
        call = callers[index]
        latencies = per_worker[index]
        start_barrier.wait()
        begin, end = window
        streak = 0
        while True:
            t0 = now()
            if t0 >= end:
                return
            try:
                call()
            except Exception as exc:
                errors[index] += 1
                streak += 1
                if not first_error:
                    first_error.append(f"{type(exc).__name__}: {exc}")
                if streak >= 100:
                    return
                continue
            streak = 0
            t1 = now()
            if t0 >= begin and t1 <= end:
                completed[index] += 1
                if len(latencies) < max_samples:
                    latencies.append((t1 - t0) * 1000.0)

    threads = [
        threading.Thread(target=work, args=(i,), name=f"loadgen-{i}", daemon=True)
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    t = now()
    window[0] = t + warmup
    window[1] = t + warmup + duration
    start_barrier.wait()
    before: Mapping[str, float] = {}
    delay = window[0] - now()
    if delay > 0:
        time.sleep(delay)
    if sample is not None:
        before = sample()
    delay = window[1] - now()
    if delay > 0:
        time.sleep(delay)
    after = sample() if sample is not None else {}
    for thread in threads:
        thread.join(timeout=max(30.0, duration * 4))
    latencies = [value for worker in per_worker for value in worker]
    return LoadResult(
        concurrency=concurrency,
        duration_s=duration,
        completed=sum(completed),
        errors=sum(errors),
        latencies_ms=latencies,
        first_error=first_error[0] if first_error else "",
        samples={key: after[key] - before.get(key, 0.0) for key in after},
    )


# -- gRPC --------------------------------------------------------------------------------------

_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
]


def build_request(model: str, inputs: Mapping[str, NDArray[Any]]) -> Any:
    """A ``ModelInferRequest`` for ``model`` carrying ``inputs`` as raw contents (BYTES
    tensors serialized the way tritonclient does); every output is returned."""
    from tritonclient.grpc import service_pb2
    from tritonclient.utils import np_to_triton_dtype, serialize_byte_tensor

    request = service_pb2.ModelInferRequest(model_name=model)
    for name, array in inputs.items():
        tensor = request.inputs.add()
        tensor.name = name
        tensor.datatype = np_to_triton_dtype(array.dtype)
        tensor.shape.extend(int(d) for d in array.shape)
        if array.dtype == object:
            serialized = serialize_byte_tensor(array)  # a 0-d object array holding bytes
            request.raw_input_contents.append(serialized.item() if serialized.size else b"")
        else:
            request.raw_input_contents.append(np.ascontiguousarray(array).tobytes())
    return request


def _stub(url: str) -> Any:
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    channel = grpc.insecure_channel(url, options=_CHANNEL_OPTIONS)
    return service_pb2_grpc.GRPCInferenceServiceStub(channel)


def grpc_caller(
    url: str, model: str, payloads: Sequence[Mapping[str, NDArray[Any]]], offset: int = 0
) -> Caller:
    """A callable sending ``payloads`` in rotation to ``model`` at ``url`` (``host:port``)
    over its own gRPC channel, raising on an error response."""
    stub = _stub(url)
    requests = [build_request(model, payload) for payload in payloads]
    infer = stub.ModelInfer
    state = [offset % len(requests)]
    count = len(requests)

    def call() -> None:
        index = state[0]
        state[0] = (index + 1) % count
        infer(requests[index], timeout=60.0)

    return call


def grpc_infer_once(
    url: str, model: str, payload: Mapping[str, NDArray[Any]]
) -> Dict[str, NDArray[Any]]:
    """Send one request and return its outputs as numpy arrays (BYTES as object arrays)."""
    from tritonclient.grpc import InferResult

    response = _stub(url).ModelInfer(build_request(model, payload), timeout=120.0)
    result = InferResult(response)
    return {out.name: result.as_numpy(out.name) for out in response.outputs}


def wait_model_ready(url: str, models: Sequence[str], timeout: float = 180.0) -> None:
    """Poll until ``models`` are ready at ``url`` (gRPC), or raise TimeoutError."""
    import grpc
    from tritonclient.grpc import service_pb2

    stub = _stub(url)
    deadline = time.monotonic() + timeout
    pending = list(models)
    while pending:
        try:
            reply = stub.ModelReady(service_pb2.ModelReadyRequest(name=pending[0]), timeout=5.0)
            if reply.ready:
                pending.pop(0)
                continue
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"models {pending} not ready at {url} after {timeout:.0f} s")
        time.sleep(0.5)
