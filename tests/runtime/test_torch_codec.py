"""TorchTensor: DLPack in and out, merged batches, casts. Needs torch (marked ``torch``: the
extra-interpreter runtime runs leave torch out, since only a CUDA build of several GB exists
for them; the main test environment has the CPU build)."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, fake_pb_utils

pytestmark = pytest.mark.torch
# imported by the fixture below, so that `-m "not torch"` deselects these tests without ever
# importing torch (the extra-interpreter runtime runs have none)
torch: Any = None


@pytest.fixture(autouse=True)
def _torch() -> None:
    global torch
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install 'tritonpy[torch]'")


class Linear(tp.Model):
    inputs = {"X": tp.TorchTensor("FP32", [3])}
    outputs = {"Y": tp.TorchTensor("FP32", [2]), "ARGMAX": tp.Tensor("INT64", [1])}
    max_batch_size = 8

    def setup(self) -> None:
        torch.manual_seed(0)
        self.net = torch.nn.Linear(3, 2)
        self.seen: List[Any] = []

    def infer(self, X: Any) -> Dict[str, Any]:
        self.seen.append(X)
        with torch.inference_mode():
            y = self.net(X)
        return {"Y": y, "ARGMAX": y.argmax(dim=1).numpy()}


def test_torch_model_merges_requests_and_matches_the_module() -> None:
    a = np.random.default_rng(0).random((2, 3), dtype=np.float32)
    b = np.random.default_rng(1).random((1, 3), dtype=np.float32)
    with ModelHarness(Linear) as harness:
        results = harness.infer_requests([{"X": a}, {"X": b}])
        (seen,) = harness.model.seen
        expected = harness.model.net(torch.from_numpy(np.concatenate([a, b]))).detach().numpy()
    assert isinstance(seen, torch.Tensor) and seen.shape == (3, 3)
    np.testing.assert_allclose(results[0]["Y"], expected[:2], rtol=1e-6)
    np.testing.assert_allclose(results[1]["Y"], expected[2:], rtol=1e-6)
    assert results[0]["Y"].dtype == np.float32
    assert results[1]["ARGMAX"].tolist() == [[int(expected[2].argmax())]]


def test_single_request_input_shares_memory_with_the_triton_tensor() -> None:
    codec = tp.TorchTensor("FP32", [3])
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = fake_pb_utils.Tensor("X", array)
    value = codec.decode("X", tensor, batched=True)
    value[0, 0] = 42.0  # zero-copy: the write shows through the Triton tensor's memory
    assert tensor.as_numpy()[0, 0] == 42.0


def test_output_goes_out_through_dlpack_without_copy() -> None:
    codec = tp.TorchTensor("FP32", [3])
    value = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    encoded = codec.encode("Y", value, batched=True)
    (part,) = codec.split(encoded, [2])
    tensor = codec.to_tensor("Y", part, fake_pb_utils)
    assert np.shares_memory(tensor.as_numpy(), value.numpy())


def test_wrong_dtype_in_and_lossy_cast_out_are_refused() -> None:
    codec = tp.TorchTensor("FP32", [3])
    with pytest.raises(
        tp.InputError, match=r"expected FP32 with shape \[rows, 3\], got torch.int32"
    ):
        codec.decode("X", fake_pb_utils.Tensor("X", np.zeros((1, 3), np.int32)), batched=True)
    int_codec = tp.TorchTensor("INT32", [3])
    with pytest.raises(tp.OutputError, match=r"expected INT32, got torch.float32"):
        int_codec.encode("Y", torch.zeros((1, 3)), batched=True)
    assert int_codec.encode("Y", torch.zeros((1, 3), dtype=torch.int64), batched=True).dtype == (
        torch.int32
    )


def test_bf16_is_allowed_for_torch() -> None:
    codec = tp.TorchTensor("BF16", [2])
    assert codec.config_entry("X", is_input=True)["data_type"] == "TYPE_BF16"
    assert codec.torch_dtype == torch.bfloat16


def test_numpy_output_is_accepted() -> None:
    codec = tp.TorchTensor("FP32", [2])
    encoded = codec.encode("Y", np.ones((3, 2), np.float64), batched=True)
    assert encoded.dtype == torch.float32 and tuple(encoded.shape) == (3, 2)
