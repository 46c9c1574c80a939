"""The direct path (tritonpy/_runtime/_engine/_direct.py) of models with ``tp.TorchTensor`` and
``tp.Image`` inputs: a request alone and the requests of one call merged answer exactly as the
general paths do, whatever the requests hold and whatever ``infer`` returns.

As in test_direct_path.py, requests are built with the fake pb_utils and handed to
``execute()`` directly; an answer is what the client gets."""

from __future__ import annotations

import struct
import zlib
from typing import Any, Callable, Dict, List, Type

import numpy as np
import pytest
from direct_paths import both, without_fallback

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as pb

torch = pytest.importorskip("torch", reason="TorchTensor needs PyTorch (the torch extra)")


def _answer(response: Any) -> Any:
    if response.has_error():
        error = response.error()
        return ("error", int(error.code()), error.message())
    return {
        t.name(): (str(t.as_numpy().dtype), t.as_numpy().tolist())
        for t in response.output_tensors()
    }


def _request(**tensors: Any) -> Any:
    return pb.InferenceRequest(
        model_name="m",
        inputs=[
            pb.Tensor.from_dlpack(name, torch.utils.dlpack.to_dlpack(value))
            if isinstance(value, torch.Tensor)
            else pb.Tensor(name, np.asarray(value))
            for name, value in tensors.items()
        ],
    )


# -- TorchTensor ------------------------------------------------------------------------------

TorchReturns = Callable[[Any, Any], Any]


def _torch_model(batch: int, returns: TorchReturns) -> Type[tp.Model]:
    class Scale(tp.Model):
        inputs = {"X": tp.TorchTensor("FP32", [2]), "N": tp.TorchTensor("INT64", [-1])}
        outputs = {"Y": tp.TorchTensor("FP32", [2]), "M": tp.TorchTensor("INT64", [-1])}
        max_batch_size = batch
        check_cancellation = False

        def infer(self, X: Any, N: Any) -> Any:
            return returns(X, N)

    return Scale


def _rows(n: int, width: int = 3, start: float = 0.0) -> Dict[str, Any]:
    return {
        "X": torch.arange(n * 2, dtype=torch.float32).reshape(n, 2) + start,
        "N": torch.arange(n * width, dtype=torch.int64).reshape(n, width),
    }


TORCH_CALLS: List[List[Any]] = [
    [_request(**_rows(1))],
    [_request(**_rows(2, start=5))],
    [_request(**_rows(1)), _request(**_rows(3, start=10)), _request(**_rows(2, start=20))],
    [_request(**_rows(1)), _request(**_rows(1, width=4))],  # ragged rows: not merged
    [_request(X=_rows(1)["X"].double(), N=_rows(1)["N"])],  # wrong dtype
    [_request(**_rows(1)), _request(X=torch.zeros(1, 3), N=_rows(1)["N"])],  # wrong shape
    [_request(X=_rows(2)["X"], N=_rows(1)["N"])],  # the rows disagree
    [_request(X=_rows(1)["X"])],  # an input missing
    [_request(X=_rows(1)["X"].numpy(), N=_rows(1)["N"].numpy())],  # numpy-made tensors
]

TORCH_RETURNS: Dict[str, TorchReturns] = {
    "tensors": lambda x, n: {"Y": x * 2, "M": n + 1},
    "numpy-arrays": lambda x, n: {"Y": (x * 2).numpy(), "M": (n + 1).numpy()},
    "float64": lambda x, n: {"Y": (x * 2).double(), "M": n},
    "needs-grad": lambda x, n: {"Y": (x * 2).requires_grad_(), "M": n},
    "not-contiguous": lambda x, n: {"Y": (x * 2).t().contiguous().t(), "M": n},
    "rows-lost": lambda x, n: {"Y": x[:1], "M": n[:1]},
    "output-missing": lambda x, n: {"Y": x},
    "crash": lambda x, n: 1 / 0,
}


@pytest.mark.parametrize("returns", list(TORCH_RETURNS), ids=list(TORCH_RETURNS))
@pytest.mark.parametrize("batch", [0, 8], ids=["unbatched", "batched"])
def test_torch_answers_match_the_general_path(returns: str, batch: int) -> None:
    calls = TORCH_CALLS if batch else [[_request(X=torch.ones(2), N=torch.arange(3))]]
    direct, general = both(_torch_model(batch, TORCH_RETURNS[returns]), calls, _answer)
    assert direct == general
    if returns == "tensors" and batch:
        assert direct[1][0]["Y"] == ("float32", [[10.0, 12.0], [14.0, 16.0]])
        merged = direct[2]
        assert [a["Y"][1] for a in merged] == [
            [[0.0, 2.0]],
            [[20.0, 22.0], [24.0, 26.0], [28.0, 30.0]],
            [[40.0, 42.0], [44.0, 46.0]],
        ]
        assert all(isinstance(a, dict) for a in direct[3])
        model = _torch_model(batch, TORCH_RETURNS[returns])
        assert without_fallback(model, TORCH_CALLS[:3], _answer) == direct[:3]
        assert [a[0] for a in direct[4]] == ["error"]
        assert isinstance(direct[5][0], dict) and direct[5][1][0] == "error"


def test_torch_inputs_moved_to_a_device_take_the_general_path() -> None:
    class Moved(tp.Model):
        inputs = {"X": tp.TorchTensor("FP32", [2], device="cpu")}
        outputs = {"Y": tp.TorchTensor("FP32", [2])}

        def infer(self, X: Any) -> Any:
            return {"Y": X}

    with ModelHarness(Moved) as harness:
        assert engine_of(harness.model).direct_inputs is None
        assert harness.infer({"X": np.ones(2, np.float32)})["Y"].tolist() == [1.0, 1.0]


# -- Image ------------------------------------------------------------------------------------


def _png(pixels: np.ndarray) -> bytes:
    """A grayscale PNG of ``pixels`` (uint8, H x W), written without OpenCV."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    height, width = pixels.shape
    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _image(seed: int, size: int = 12) -> bytes:
    rng = np.random.default_rng(seed)
    return _png(rng.integers(0, 256, (size, size), dtype=np.uint8))


def _images(*elements: bytes) -> Any:
    return _request(IMAGE=np.array([[e] for e in elements], dtype=object))


HUGE = _png(np.zeros((2, 2), np.uint8)).replace(
    struct.pack(">II", 2, 2), struct.pack(">II", 30000, 30000), 1
)
IMAGE_CALLS: List[List[Any]] = [
    [_images(_image(0))],
    [_images(_image(1), _image(2, size=20))],
    [_images(_image(3)), _images(_image(4), _image(5)), _images(_image(6))],
    [_images(b"not an image")],
    [_images(_image(7)), _images(b""), _images(_image(8))],
    [_images(HUGE)],
    [_images(_image(9)), _images(HUGE, _image(10))],
    [_request(IMAGE=np.array([[b"x"]], dtype=object), OTHER=np.ones((1, 1), np.float32))],
]


@pytest.mark.parametrize("normalize", [True, False], ids=["normalize", "pixels"])
def test_image_answers_match_the_general_path(normalize: bool) -> None:
    pytest.importorskip("cv2", reason="tp.Image needs OpenCV (the image extra)")
    codec = tp.Image(
        color="GRAY",
        size=(8, 8),
        max_pixels=10_000,
        normalize=tp.vision.Normalize(mean=0.5, std=0.5) if normalize else None,
    )

    class Digits(tp.Model):
        inputs = {"IMAGE": codec}
        outputs = {"PIXELS": tp.Tensor("FP32", [1, 8, 8])}
        max_batch_size = 8
        check_cancellation = False

        def infer(self, IMAGE: Any) -> Any:
            if normalize:
                return {"PIXELS": IMAGE}
            return {"PIXELS": np.stack([im[None, :, :, 0] for im in IMAGE]).astype(np.float32)}

    direct, general = both(Digits, IMAGE_CALLS, _answer)
    assert direct == general
    answered = [isinstance(a, dict) for call in direct for a in call]
    # per call: one image; two; three requests; a bad image; a good, an empty and a good one;
    # too many pixels; a good one and one with too many pixels; an unknown input
    assert answered == [
        *[True, True],
        *[True, True, True],
        False,
        *[True, False, True],
        False,
        *[True, False],
        False,
    ]
    assert without_fallback(Digits, IMAGE_CALLS[:3], _answer) == direct[:3]
    assert "exceeds the limit" in direct[5][0][2] and "30000x30000" in direct[5][0][2]
    assert len(direct[2][1]["PIXELS"][1]) == 2  # the second request's two images
