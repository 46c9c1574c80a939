"""The settings a model makes in its own stub process, in a real tritonserver.

``tune_malloc``: a model that allocates MB-sized numpy buffers on every call faults its pages
in again on every request under glibc's defaults inside the r24.10 stub; with tritonpy's
default (``tune_malloc = True``) the same model faults none. The figures are read from the
stub process of each model (``/proc/<pid>/stat``, minor page faults), so the test measures the
stub, not the client or the server.

``torch_threads``: the stub's torch runs with that many intra-op threads; without it, torch's
default."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict

import numpy as np
import pytest

from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.server._stubwatch import live_stubs

pytestmark = pytest.mark.integration

#: a preprocessing model's allocations without OpenCV: a 640x480 "decoded" image and a
#: smaller copy per row, written into a 3 x 224 x 224 float32 output batch
MODEL = """
import numpy as np
import tritonpy as tp


class Buffers(tp.Model):
    inputs = {"IMAGE": tp.Bytes()}
    outputs = {"PIXELS": tp.Tensor("FP32", [3, 224, 224])}
    max_batch_size = 16
    TUNE

    def infer(self, IMAGE):
        out = np.empty((len(IMAGE), 3, 224, 224), np.float32)
        for row in range(len(IMAGE)):
            decoded = np.full((480, 640, 3), len(IMAGE[row]), np.uint8)
            small = decoded[::2, ::2].copy()
            out[row] = small[:224, :224].transpose(2, 0, 1)
        return {"PIXELS": out}


TritonPythonModel = Buffers
"""
MODELS = {"buffers_tuned": "", "buffers_default": "tune_malloc = False"}
REQUESTS = 60

#: answers with the number of intra-op threads torch runs with in the stub
TORCH_MODEL = """
import numpy as np
import torch
import tritonpy as tp


class Threads(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1])}
    outputs = {"THREADS": tp.Tensor("INT32", [1])}
    SETTING

    def infer(self, X):
        return {"THREADS": np.array([torch.get_num_threads()], np.int32)}


TritonPythonModel = Threads
"""
TORCH_MODELS = {"torch_one": "torch_threads = 1", "torch_default": ""}


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer], tmp_path_factory: pytest.TempPathFactory
) -> TritonServer:
    repo = tmp_path_factory.mktemp("stub_settings_repo")
    for name, line in MODELS.items():
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.py").write_text(MODEL.replace("TUNE", line), "utf-8")
        (repo / name / "config.pbtxt").write_text(
            f'name: "{name}"\nbackend: "python"\n', encoding="utf-8"
        )
    for name, line in TORCH_MODELS.items():
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.py").write_text(TORCH_MODEL.replace("SETTING", line), "utf-8")
        (repo / name / "config.pbtxt").write_text(
            f'name: "{name}"\nbackend: "python"\n', encoding="utf-8"
        )
    return triton_server_factory(repo)


def minor_faults(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7])  # minflt: the 10th field of stat, the 8th after the name


def faults_per_request(server: TritonServer, model: str) -> float:
    assert server.pid is not None
    (stub,) = [s for s in live_stubs(server.pid) if s.model == model]
    image = np.array([[b"x" * 100]], dtype=object)
    client = InferClient(server.grpc_url, "grpc")
    try:
        for _ in range(10):  # warm: the first calls grow the heap either way
            client.infer(model, {"IMAGE": image})
        before = minor_faults(stub.pid)
        for _ in range(REQUESTS):
            (pixels,) = client.infer(model, {"IMAGE": image})
            assert pixels.array.shape == (1, 3, 224, 224)
            assert pixels.array[0, 0, 0, 0] == 100
        return (minor_faults(stub.pid) - before) / REQUESTS
    finally:
        client.close()


def test_a_tuned_stub_reuses_its_buffers_instead_of_faulting_them_in(
    server: TritonServer,
) -> None:
    faults: Dict[str, float] = {model: faults_per_request(server, model) for model in MODELS}
    # one request allocates ~1.3 MB of buffers: ~330 pages of 4 KB
    assert faults["buffers_default"] > 100, faults
    assert faults["buffers_tuned"] < 5, faults


def test_torch_threads_reaches_the_stub(server: TritonServer) -> None:
    default = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    client = InferClient(server.grpc_url, "grpc")
    try:
        threads = {
            model: int(client.infer(model, {"X": np.zeros((1,), np.float32)})[0].array[0])
            for model in TORCH_MODELS
        }
    finally:
        client.close()
    assert threads == {"torch_one": 1, "torch_default": int(default)}
