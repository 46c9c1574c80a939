"""gRPC helpers of the benchmark beside the load itself (the closed-loop load generator and
the CPU accounting are tritonpy's own: :mod:`tritonpy.perf._engine`, :mod:`tritonpy.perf._cpu`):
one request whose outputs are compared across variants, and a wait for models to be ready.

Example::

    wait_model_ready("127.0.0.1:8001", ["add_sub_pytriton"])
    outputs = grpc_infer_once("127.0.0.1:8001", "add_sub_raw", payload)
"""

from __future__ import annotations

import time
from typing import Any, Dict, Mapping, Sequence

from numpy.typing import NDArray

from tritonpy.perf._engine import GRPC_CHANNEL_OPTIONS, grpc_request

__all__ = ["grpc_infer_once", "wait_model_ready"]


def _stub(url: str) -> Any:
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    channel = grpc.insecure_channel(url, options=GRPC_CHANNEL_OPTIONS)
    return service_pb2_grpc.GRPCInferenceServiceStub(channel)


def grpc_infer_once(
    url: str, model: str, payload: Mapping[str, NDArray[Any]]
) -> Dict[str, NDArray[Any]]:
    """Send one request and return its outputs as numpy arrays (BYTES as object arrays)."""
    from tritonclient.grpc import InferResult

    response = _stub(url).ModelInfer(grpc_request(model, payload), timeout=120.0)
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
