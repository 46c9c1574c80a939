"""A request its client cancels while it waits in the queue (the model busy with another),
on a real tritonserver 24.10 and in the harness.

Measured on 24.10 with tritonclient's gRPC client (``async_infer(...).cancel()`` while a
first request keeps the model's one instance busy): the client sees its own cancellation,
code CANCELLED, ``Locally cancelled by application!``, and ``execute()`` never receives the
cancelled request, with and without ``dynamic_batching`` (the scheduler's queue drops a
cancelled request and answers it CANCELLED: core ``src/scheduler_utils.cc``
``PolicyQueue::ApplyPolicy``, ``src/dynamic_batch_scheduler.cc``
``FinishRejectedCancelledRequests``). The harness's ``infer(..., cancel=True)`` is that
request: the client's CANCELLED, ``execute()`` not called.
"""

from __future__ import annotations

import queue
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from tritonpy.client import request_error
from tritonpy.server import TritonServer
from tritonpy.testing import ClientCancelledError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb

pytestmark = pytest.mark.integration

CLIENT_SEES = ("CANCELLED", "Locally cancelled by application!")

MODEL = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            delay = float(pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy().ravel()[0])
            seen = int(request.is_cancelled())
            pb_utils.Logger.log_info(f"cq-exec id={request.request_id()} cancelled={seen}")
            time.sleep(delay)
            out = pb_utils.Tensor("SEEN", np.array([seen], np.int32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
"""

CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: {batch}
input [ {{ name: "DELAY", data_type: TYPE_FP32, dims: [ 1 ] }} ]
output [ {{ name: "SEEN", data_type: TYPE_INT32, dims: [ 1 ] }} ]
instance_group [ {{ count: 1, kind: KIND_CPU }} ]
{batching}
"""

#: name -> (max_batch_size, batching block): the default scheduler and the dynamic batcher
KINDS = {"cq_plain": (0, ""), "cq_batched": (4, "dynamic_batching { }")}


def _write(root: Path, name: str) -> Path:
    batch, batching = KINDS[name]
    (root / name / "1").mkdir(parents=True)
    (root / name / "1" / "model.py").write_text(textwrap.dedent(MODEL))
    config = CONFIG.format(name=name, batch=batch, batching=batching)
    (root / name / "config.pbtxt").write_text(config)
    return root / name


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cancel_queued") / "repo"
    for name in KINDS:
        _write(root, name)
    return root


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer], models: Path) -> TritonServer:
    return triton_server_factory(models)


def _delay(value: float, batched: bool) -> List[Any]:
    shape = [1, 1] if batched else [1]
    tensor = grpcclient.InferInput("DELAY", shape, "FP32")
    tensor.set_data_from_numpy(np.array([value], np.float32).reshape(shape))
    return [tensor]


def _queued_cancel(server: TritonServer, name: str) -> Tuple[Any, Any]:
    """A first request keeps the one instance busy 2 s; a second, sent meanwhile, is
    cancelled while it waits; return what both clients got."""
    batched = KINDS[name][0] > 0
    answers: queue.Queue[Tuple[str, Any, Any]] = queue.Queue()
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        client.async_infer(
            name,
            _delay(2.0, batched),
            lambda result, error: answers.put(("busy", result, error)),
            request_id=f"busy-{name}",
        )
        time.sleep(0.5)  # the first one is in execute()
        second = client.async_infer(
            name,
            _delay(0.0, batched),
            lambda result, error: answers.put(("queued", result, error)),
            request_id=f"queued-{name}",
        )
        time.sleep(0.3)
        second.cancel()
        got = {}
        for _ in range(2):
            who, result, error = answers.get(timeout=20)
            got[who] = (result, error)
        time.sleep(0.5)  # the server's log catches up
    return got["busy"], got["queued"]


def _logged(server: TritonServer, mark: str) -> List[str]:
    assert server.log_path is not None
    return [line for line in Path(server.log_path).read_text().splitlines() if mark in line]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_request_cancelled_in_the_queue_never_reaches_execute(
    server: TritonServer, name: str
) -> None:
    busy, queued = _queued_cancel(server, name)
    assert busy[1] is None and busy[0].as_numpy("SEEN").ravel().tolist() == [0]
    assert queued[0] is None
    error = request_error(queued[1])
    assert (error.code, error.message) == CLIENT_SEES
    print("server log:", _logged(server, "cq-exec"))
    assert len(_logged(server, f"cq-exec id=busy-{name} cancelled=0")) == 1
    assert len(_logged(server, f"cq-exec id=queued-{name} cancelled=1")) == 1


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_harness_cancelled_before_execute_agrees(models: Path, name: str) -> None:
    shape = (1, 1) if KINDS[name][0] > 0 else (1,)
    with ModelHarness(models / name) as harness:
        with pytest.raises(ClientCancelledError) as info:
            harness.infer(
                {"DELAY": np.zeros(shape, np.float32)}, request_id=f"h-{name}", cancel=True
            )
    # the client: its own cancellation, as the real server's client above
    assert (info.value.code, info.value.message) == CLIENT_SEES
    # the model: execute() ran, is_cancelled() True, its answer never reached the client
    assert [r.message for r in pb.log_records if f"id=h-{name} " in r.message] == [
        f"cq-exec id=h-{name} cancelled=1"
    ]
    assert info.value.model_result["SEEN"].ravel().tolist() == [1]
    assert "answered with its outputs, which a client never receives" in str(info.value)
