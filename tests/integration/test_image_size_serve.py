"""``tp.Image(size=...)`` in a real tritonserver: images decoded straight to the model's size
(reduced-size JPEG decoding, merged batches on threads), and with ``normalize=`` straight into
a float32 batch, give the same outputs and the same per-request errors as in ModelHarness,
under concurrent requests the dynamic batcher merges."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Union

import cv2
import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

MODEL = """
import numpy as np
import tritonpy as tp


class Thumbs(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB", size=(48, 32))}
    outputs = {"PIXELS": tp.Tensor("UINT8", [32, 48, 3]), "ROWS": tp.Tensor("INT32", [1])}
    max_batch_size = 16

    def infer(self, IMAGE):
        rows = np.full((len(IMAGE), 1), len(IMAGE), np.int32)
        return {"PIXELS": np.stack(IMAGE), "ROWS": rows}


TritonPythonModel = Thumbs
"""
NORMALIZED = """
import numpy as np
import tritonpy as tp

IMAGENET = tp.vision.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))


class Imagenet(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB", size=(48, 32), normalize=IMAGENET)}
    outputs = {"PIXELS": tp.Tensor("FP32", [3, 32, 48]), "ROWS": tp.Tensor("INT32", [1])}
    max_batch_size = 16

    def infer(self, IMAGE):
        rows = np.full((len(IMAGE), 1), len(IMAGE), np.int32)
        return {"PIXELS": IMAGE, "ROWS": rows}


TritonPythonModel = Imagenet
"""
MODELS = {"thumbs": (MODEL, (32, 48, 3)), "imagenet": (NORMALIZED, (3, 32, 48))}
CONFIG = (
    'name: "{}"\nbackend: "python"\ndynamic_batching {{ max_queue_delay_microseconds: 20000 }}\n'
)

Result = Union[Dict[str, np.ndarray], TritonRequestError]


def jpeg(width: int, height: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (height // 8, width // 8, 3)).astype(np.uint8)
    image = cv2.resize(image, (width, height), interpolation=cv2.INTER_CUBIC)
    return bytes(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1])


def column(*values: bytes) -> np.ndarray:
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = list(values)
    return array


GOOD = [jpeg(320, 240, seed) for seed in range(6)]
REQUESTS = [
    {"IMAGE": column(GOOD[0])},
    {"IMAGE": column(GOOD[1], GOOD[2])},
    {"IMAGE": column(GOOD[3], GOOD[4][:300])},  # a cut JPEG: only decoding finds out
    {"IMAGE": column(GOOD[5])},
    {"IMAGE": column(b"")},
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("image_size_repo")
    for name, (source, _) in MODELS.items():
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.py").write_text(source, encoding="utf-8")
        (repo / name / "config.pbtxt").write_text(CONFIG.format(name), encoding="utf-8")
    return repo


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer], repo: Path) -> TritonServer:
    return triton_server_factory(repo)


def concurrently(
    url: str, protocol: str, model: str, requests: List[Dict[str, Any]]
) -> List[Result]:
    """Each request from its own thread and client, so the dynamic batcher can merge them."""
    results: List[Any] = [None] * len(requests)

    def send(index: int) -> None:
        client = InferClient(url, protocol)
        try:
            outputs = client.infer(model, requests[index])
            results[index] = {o.name: o.array for o in outputs}
        except TritonRequestError as exc:
            results[index] = exc
        finally:
            client.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_sized_images_agree_with_the_harness(
    server: TritonServer, repo: Path, protocol: str, model: str
) -> None:
    with ModelHarness(repo / model) as harness:
        expected = harness.infer_requests(REQUESTS)
    url = server.http_url if protocol == "http" else server.grpc_url
    got = concurrently(url, protocol, model, REQUESTS)
    for index, (want, have) in enumerate(zip(expected, got)):
        if isinstance(want, TritonRequestError):
            assert isinstance(have, TritonRequestError), (index, have)
            assert (have.code, have.message) == (want.code, want.message)
            continue
        assert not isinstance(have, TritonRequestError), (index, have)
        np.testing.assert_array_equal(have["PIXELS"], want["PIXELS"])
        assert have["PIXELS"].shape == (len(REQUESTS[index]["IMAGE"]), *MODELS[model][1])
    assert isinstance(got[2], TritonRequestError) and got[2].code == "INVALID_ARG"
    assert got[2].message.startswith("input 'IMAGE', row 1: expected an encoded image")
    assert isinstance(got[4], TritonRequestError)
    assert got[4].message.startswith("input 'IMAGE', row 0: expected an encoded image")
