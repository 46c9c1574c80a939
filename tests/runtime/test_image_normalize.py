"""``tp.Image(size=..., normalize=tp.vision.Normalize(...))``: images decoded, resized and
normalised on their decoding thread straight into one float32 ``N x C x H x W`` batch. The
pixels must equal ``tp.vision.to_chw_batch`` of what ``tp.Image(size=...)`` decodes, in every
path (one image alone, merged requests on threads, no batching), and the per-request errors
stay those of the Image codec."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness

cv2 = pytest.importorskip(
    "cv2", reason="tp.Image needs OpenCV: pip install 'tritonpy[image]' to run this test"
)

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
IMAGENET = tp.vision.Normalize(mean=MEAN, std=STD)


def photo(width: int, height: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (height // 8, width // 8, 3)).astype(np.uint8)
    pixels = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_CUBIC)
    return bytes(cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, 90])[1])


def column(*values: bytes) -> np.ndarray:
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = list(values)
    return array


def model(codec: tp.Image, max_batch_size: int = 16) -> type:
    channels = codec._channels
    width, height = codec.size  # type: ignore[misc]

    class Preprocess(tp.Model):
        inputs = {"IMAGE": codec}
        outputs = {"PIXELS": tp.Tensor("FP32", [channels, height, width])}

        def setup(self) -> None:
            self.seen: List[Any] = []

        def infer(self, IMAGE: Any) -> Dict[str, Any]:
            self.seen.append(IMAGE)
            return {"PIXELS": IMAGE}

    Preprocess.max_batch_size = max_batch_size  # type: ignore[misc]
    return Preprocess


def reference(images: List[bytes], color: str = "RGB", **normalize: Any) -> np.ndarray:
    """What a model without normalize= computes: Image(size=...) then to_chw_batch."""
    codec = tp.Image(color=color, size=(64, 48))  # type: ignore[arg-type]
    decoded = [codec.decode_element(data) for data in images]
    return tp.vision.to_chw_batch(decoded, **normalize)


IMAGES = [photo(320 + 32 * i, 240, seed=i) for i in range(5)]


@pytest.mark.parametrize("threads", [1, 2])
def test_merged_requests_arrive_as_one_normalised_batch(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tritonpy._runtime.codecs import _image_decode

    monkeypatch.setattr(_image_decode, "PARALLEL_MIN_BYTES", 0)
    codec = tp.Image(color="RGB", size=(64, 48), normalize=IMAGENET, threads=threads)
    with ModelHarness(model(codec)) as harness:
        results = harness.infer_requests(
            [
                {"IMAGE": column(*IMAGES[:2])},
                {"IMAGE": column(IMAGES[2])},
                {"IMAGE": column(*IMAGES[3:])},
            ]
        )
        (seen,) = harness.model.seen
    assert isinstance(seen, np.ndarray) and seen.dtype == np.float32
    assert seen.shape == (5, 3, 48, 64) and seen.flags.c_contiguous
    expected = reference(IMAGES, mean=MEAN, std=STD)
    np.testing.assert_array_equal(seen, expected)
    got = np.concatenate([r["PIXELS"] for r in results])  # type: ignore[index]
    np.testing.assert_array_equal(got, expected)


def test_one_image_alone_and_without_batching() -> None:
    codec = tp.Image(color="BGR", size=(64, 48), normalize=IMAGENET)
    expected = reference(IMAGES[:1], color="BGR", mean=MEAN, std=STD)
    with ModelHarness(model(codec)) as harness:
        (pixels,) = harness.infer({"IMAGE": column(IMAGES[0])}).values()
        assert harness.model.seen[0].shape == (1, 3, 48, 64)
    np.testing.assert_array_equal(pixels, expected)
    with ModelHarness(model(codec, max_batch_size=0)) as harness:
        (pixels,) = harness.infer({"IMAGE": np.array([IMAGES[0]], dtype=object)}).values()
        assert harness.model.seen[0].shape == (3, 48, 64)  # one image: C x H x W
    np.testing.assert_array_equal(pixels, expected[0])


def test_gray_images_with_one_mean_and_std() -> None:
    codec = tp.Image(color="GRAY", size=(64, 48), normalize=tp.vision.Normalize(0.5, 0.25))
    with ModelHarness(model(codec)) as harness:
        harness.infer_requests([{"IMAGE": column(IMAGES[0])}, {"IMAGE": column(IMAGES[1])}])
        (seen,) = harness.model.seen
    assert seen.shape == (2, 1, 48, 64)
    np.testing.assert_array_equal(seen, reference(IMAGES[:2], color="GRAY", mean=0.5, std=0.25))


def test_a_bad_image_fails_its_request_alone() -> None:
    truncated = IMAGES[1][:300]
    codec = tp.Image(size=(64, 48), normalize=IMAGENET)
    with ModelHarness(model(codec)) as harness:
        results = harness.infer_requests(
            [{"IMAGE": column(IMAGES[0])}, {"IMAGE": column(IMAGES[2], truncated)}]
        )
    np.testing.assert_array_equal(results[0]["PIXELS"], reference(IMAGES[:1], mean=MEAN, std=STD))  # type: ignore[index]
    error = results[1]
    assert isinstance(error, tp.TritonRequestError) and error.code == "INVALID_ARG"
    assert error.message.startswith("input 'IMAGE', row 1: expected an encoded image"), error


def test_rows_of_several_images_are_lists_of_normalised_images() -> None:
    codec = tp.Image(dims=[-1], size=(64, 48), normalize=IMAGENET)

    class Count(tp.Model):
        inputs = {"IMAGE": codec}
        outputs = {"MEAN": tp.Tensor("FP32", [1])}
        max_batch_size = 4

        def infer(self, IMAGE: Any) -> Dict[str, Any]:
            assert all(image.shape == (3, 48, 64) for row in IMAGE for image in row)
            return {"MEAN": np.array([[np.mean(row)] for row in IMAGE], np.float32)}

    images = np.array([[IMAGES[0], IMAGES[1]]], dtype=object)
    with ModelHarness(Count) as harness:
        (mean,) = harness.infer({"IMAGE": images}).values()
    assert mean[0, 0] == pytest.approx(reference(IMAGES[:2], mean=MEAN, std=STD).mean(), rel=1e-5)


def test_a_subclass_decoding_its_own_way_gives_the_finished_rows() -> None:
    class Flat(tp.Image):
        def decode_element(self, data: bytes) -> Any:
            return np.full((3, 48, 64), len(data), np.float32)

    with ModelHarness(model(Flat(size=(64, 48), normalize=IMAGENET))) as harness:
        harness.infer_requests([{"IMAGE": column(IMAGES[0])}, {"IMAGE": column(IMAGES[1])}])
        (seen,) = harness.model.seen
    assert seen[:, 0, 0, 0].tolist() == [len(IMAGES[0]), len(IMAGES[1])]


def test_normalize_declarations_are_checked() -> None:
    with pytest.raises(tp.DeclarationError, match="needs size=\\(width, height\\)"):
        tp.Image(normalize=IMAGENET)
    with pytest.raises(tp.DeclarationError, match=r"expected a tp\.vision\.Normalize"):
        tp.Image(size=(8, 8), normalize=(0.5, 0.5))  # type: ignore[arg-type]
    with pytest.raises(tp.DeclarationError, match="2 values for images of 3 channel"):
        tp.Image(size=(8, 8), normalize=tp.vision.Normalize(mean=(0.1, 0.2)))
    with pytest.raises(tp.DeclarationError, match="3 values for images of 1 channel"):
        tp.Image(color="GRAY", size=(8, 8), normalize=IMAGENET)
    with pytest.raises(tp.DeclarationError, match="a std of 0"):
        tp.vision.Normalize(std=(1.0, 0.0, 1.0))
    with pytest.raises(tp.DeclarationError, match="with a default image"):
        tp.Image(size=(8, 8), normalize=IMAGENET, default=np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(tp.DeclarationError, match="normalises decoded inputs"):

        class Out(tp.Model):
            inputs = {"X": tp.Tensor("UINT8", [2, 2, 3])}
            outputs = {"Y": tp.Image(size=(2, 2), normalize=IMAGENET)}


def test_normalize_compares_by_value() -> None:
    assert tp.vision.Normalize([0.5], [0.25]) == tp.vision.Normalize(0.5, 0.25)
    assert tp.vision.Normalize(MEAN, STD) == tp.vision.Normalize(list(MEAN), np.array(STD))
    assert hash(tp.vision.Normalize(MEAN, STD)) == hash(IMAGENET)
