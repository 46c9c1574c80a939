"""tp.vision.to_chw_batch against the naive numpy formula it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import tritonpy as tp


def naive(images: list, mean: object, std: object) -> np.ndarray:
    x = np.stack(images).astype(np.float64) / 255
    return ((x - np.asarray(mean)) / np.asarray(std)).transpose(0, 3, 1, 2)


@pytest.mark.parametrize(
    ("mean", "std"),
    [((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)), (0.5, 0.25), ([0.1, 0.2, 0.3], 2)],
)
def test_matches_the_naive_formula_for_every_way_of_giving_mean_and_std(
    mean: object, std: object
) -> None:
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (6, 5, 3), dtype=np.uint8) for _ in range(3)]
    for _ in range(2):  # the second call uses the cached coefficients
        got = tp.vision.to_chw_batch(images, mean=mean, std=std)  # type: ignore[arg-type]
        assert got.shape == (3, 3, 6, 5) and got.dtype == np.float32
        np.testing.assert_allclose(got, naive(images, mean, std), rtol=1e-5, atol=1e-5)


def test_settings_do_not_leak_between_calls() -> None:
    image = np.full((2, 2, 1), 255, np.uint8)
    assert tp.vision.to_chw_batch([image], mean=0.0, std=1.0)[0, 0, 0, 0] == pytest.approx(1.0)
    assert tp.vision.to_chw_batch([image], mean=0.5, std=0.5)[0, 0, 0, 0] == pytest.approx(1.0)
    assert tp.vision.to_chw_batch([image], mean=1.0, std=0.5)[0, 0, 0, 0] == pytest.approx(0.0)


def test_mean_with_the_wrong_number_of_channels_is_refused() -> None:
    with pytest.raises(ValueError):
        tp.vision.to_chw_batch([np.zeros((2, 2, 3), np.uint8)], mean=(0.1, 0.2), std=1.0)
