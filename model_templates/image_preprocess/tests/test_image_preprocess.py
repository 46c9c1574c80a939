"""The image_preprocess template under the fake pb_utils (tritonpy.testing.ModelHarness)."""

from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, parse_config_pbtxt

cv2 = pytest.importorskip(
    "cv2", reason="this template decodes images with OpenCV: pip install 'tritonpy[image]'"
)

MODEL_DIR = Path(__file__).resolve().parents[1]
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def config(**parameters):
    """The template's config.pbtxt with some parameters replaced."""
    result = parse_config_pbtxt((MODEL_DIR / "config.pbtxt").read_text())
    for key, value in parameters.items():
        result["parameters"][key] = {"string_value": value}
    return result


def png(image):
    ok, data = cv2.imencode(".png", image)
    assert ok
    return data.tobytes()


def photo(height, width, seed=0):
    """A BGR image with structure (gradients plus noise), as OpenCV holds it."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // width, y * 255 // height, (x + y) * 127 // (width + height)], -1)
    noise = rng.integers(0, 40, (height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def test_default_parameters_give_imagenet_rgb_224():
    red = np.zeros((40, 60, 3), np.uint8)
    red[:, :, 2] = 255  # BGR: pure red
    with ModelHarness(MODEL_DIR) as harness:
        assert harness.config["max_batch_size"] == 32
        assert harness.config["output"][0]["dims"] == [-1, -1, -1]
        pixels = harness.infer({"IMAGE": np.array([[png(red)]], dtype=object)})["PIXELS"]
    assert pixels.shape == (1, 3, 224, 224) and pixels.dtype == np.float32
    expected = (np.array([1.0, 0.0, 0.0], np.float32) - IMAGENET_MEAN) / IMAGENET_STD
    np.testing.assert_allclose(pixels[0, :, 100, 100], expected, rtol=1e-5)
    np.testing.assert_allclose(pixels[0].reshape(3, -1).std(axis=1), 0, atol=1e-6)


def test_rgb_resize_and_normalisation_match_a_reference_pipeline():
    image = photo(48, 64)
    with ModelHarness(MODEL_DIR, config=config(size="32x24")) as harness:
        pixels = harness.infer({"IMAGE": np.array([[png(image)]], dtype=object)})["PIXELS"]
    rgb = cv2.cvtColor(cv2.resize(image, (32, 24)), cv2.COLOR_BGR2RGB).astype(np.float32)
    reference = ((rgb / 255 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)
    assert pixels.shape == (1, 3, 24, 32)
    np.testing.assert_allclose(pixels[0], reference, atol=1e-5)


def test_gray_and_bgr_parameters():
    image = photo(10, 10, seed=1)
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    with ModelHarness(
        MODEL_DIR, config=config(size="10", color="GRAY", mean="0.5", std="0.5")
    ) as harness:
        from_gray = harness.infer({"IMAGE": np.array([[png(gray)]], dtype=object)})["PIXELS"]
        from_color = harness.infer({"IMAGE": np.array([[png(image)]], dtype=object)})["PIXELS"]
    expected = (gray.astype(np.float32) / 255 - 0.5) / 0.5
    assert from_gray.shape == (1, 1, 10, 10)
    np.testing.assert_allclose(from_gray[0, 0], expected, atol=1e-6)
    # a colour PNG decoded straight to gray: libpng's weights may round one level apart
    one_level = 1 / 255 / 0.5
    np.testing.assert_allclose(from_color[0, 0], expected, atol=one_level + 1e-6)

    with ModelHarness(MODEL_DIR, config=config(size="10", color="bgr", mean="0", std="1")) as h:
        bgr = h.infer({"IMAGE": np.array([[png(image)]], dtype=object)})["PIXELS"]
    np.testing.assert_allclose(bgr[0], image.transpose(2, 0, 1) / 255, atol=1e-6)


def test_requests_of_different_image_sizes_are_batched_and_split_back():
    images = [photo(20, 30, seed=2), photo(50, 40, seed=3), photo(16, 16, seed=4)]
    with ModelHarness(MODEL_DIR, config=config(size="16x16")) as harness:
        alone = [harness.infer({"IMAGE": np.array([[png(im)]], dtype=object)}) for im in images]
        calls = harness.execute_calls
        together = harness.infer_requests(
            [
                {"IMAGE": np.array([[png(images[0])], [png(images[1])]], dtype=object)},
                {"IMAGE": np.array([[png(images[2])]], dtype=object)},
            ]
        )
        assert harness.execute_calls == calls + 1
    assert together[0]["PIXELS"].shape == (2, 3, 16, 16)
    np.testing.assert_array_equal(together[0]["PIXELS"][0], alone[0]["PIXELS"][0])
    np.testing.assert_array_equal(together[0]["PIXELS"][1], alone[1]["PIXELS"][0])
    np.testing.assert_array_equal(together[1]["PIXELS"][0], alone[2]["PIXELS"][0])


def test_a_corrupt_image_fails_its_request_alone():
    good = png(photo(8, 8))
    with ModelHarness(MODEL_DIR, config=config(size="8x8")) as harness:
        results = harness.infer_requests(
            [
                {"IMAGE": np.array([[good]], dtype=object)},
                {"IMAGE": np.array([[b"not an image"]], dtype=object)},
            ]
        )
    assert results[0]["PIXELS"].shape == (1, 3, 8, 8)
    assert isinstance(results[1], tp.TritonRequestError)
    assert results[1].code == "INVALID_ARG"
    assert "IMAGE" in results[1].message


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"size": "big"}, "parameter 'size' is 'big'"),
        ({"color": "CMYK"}, "color='CMYK'"),
        ({"mean": "0.1,0.2"}, "mean='0.1,0.2'"),
        ({"std": "0"}, "std='0'"),
        ({"color": "GRAY"}, "color='GRAY'"),  # the default mean and std have 3 channels
        ({"reduced_decode": "maybe"}, "parameter 'reduced_decode' is 'maybe'"),
    ],
)
def test_bad_parameters_fail_the_load_with_a_clear_message(parameters, message):
    with pytest.raises(tp.DeclarationError) as caught:
        ModelHarness(MODEL_DIR, config=config(**parameters))
    assert message in str(caught.value) and "fix" in str(caught.value)
