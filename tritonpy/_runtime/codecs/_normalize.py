"""Pixel normalisation, ``(pixel * scale - mean) / std`` per channel, written straight from an
``H x W x C`` uint8 image into a ``C x H x W`` float32 slot: one fused multiply-add per
channel, no temporary arrays. :func:`tritonpy.vision.to_chw_batch` and
``tp.Image(normalize=...)`` share it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .._config_parameters import defer_config_arguments
from ..errors import DeclarationError

Channels = Union[float, Sequence[float]]
Coefficients = Tuple[NDArray[np.float32], NDArray[np.float32]]


@dataclass(frozen=True)
class Normalize:
    """``(pixel * scale - mean) / std`` per channel, as a float32 ``C x H x W`` array: what a
    vision network takes. ``mean`` and ``std`` are per channel (in the image's channel order)
    or one number for all; ``scale`` maps uint8 levels to ``[0, 1]`` by default.

    With ``tp.Image(size=..., normalize=...)`` every image is normalised on the decoding
    thread, right after it is decoded and resized, straight into its row of the batch:
    ``infer`` gets one float32 ``N x C x height x width`` array. Example::

        IMAGENET = tp.vision.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))

        class Preprocess(tp.Model):
            inputs = {"IMAGE": tp.Image(color="RGB", size=(224, 224), normalize=IMAGENET)}
            outputs = {"PIXELS": tp.Tensor("FP32", [3, 224, 224])}
            max_batch_size = 16

            def infer(self, IMAGE):         # float32 N x 3 x 224 x 224
                return {"PIXELS": IMAGE}

    ``mean``, ``std`` and ``scale`` may name ``config.pbtxt`` parameters instead
    (``mean=tp.config_parameter("mean", (0.5,), cast=tp.parameters.floats)``).
    """

    mean: Channels = 0.0
    std: Channels = 1.0
    scale: float = 1.0 / 255.0

    def __post_init__(self) -> None:
        arguments = {"mean": self.mean, "std": self.std, "scale": self.scale}
        if defer_config_arguments(self, Normalize.__init__, arguments):
            return  # built from the parameters' defaults; initialize rebuilds it from config
        mean, std = _floats(self.mean), _floats(self.std)
        if not mean or not std:
            raise DeclarationError(
                "Normalize: mean and std need one value per channel, or one for all; got "
                f"mean={self.mean!r}, std={self.std!r}"
            )
        if any(value == 0 for value in std):
            raise DeclarationError(f"Normalize(std={self.std!r}): a std of 0 divides by zero")
        # tuples, so that the declaration is hashable and compares by value
        object.__setattr__(self, "mean", mean if len(mean) > 1 else mean[0])
        object.__setattr__(self, "std", std if len(std) > 1 else std[0])
        object.__setattr__(self, "scale", float(self.scale))

    def coefficients(self, channels: int) -> Coefficients:
        """``(a, b)`` with ``(x * scale - mean) / std == x * a + b`` for each of ``channels``
        channels; a DeclarationError when mean or std has another number of values."""
        for name, values in (("mean", _floats(self.mean)), ("std", _floats(self.std))):
            if len(values) not in (1, channels):
                wanted = "one value" if channels == 1 else f"{channels} values or one"
                raise DeclarationError(
                    f"Normalize({name}={getattr(self, name)!r}): {len(values)} values for "
                    f"images of {channels} channel(s); give {wanted}"
                )
        return affine(self.scale, _floats(self.mean), _floats(self.std), channels)


def write_chw(image: NDArray[Any], out: NDArray[np.float32], ab: Coefficients) -> None:
    """``image`` (``H x W x C`` uint8, ``C`` = ``len(out)``) normalised into ``out``
    (``C x H x W`` float32) with the coefficients of :meth:`Normalize.coefficients`."""
    a, b = ab
    for channel in range(out.shape[0]):
        plane = out[channel]
        np.multiply(image[:, :, channel], a[channel], out=plane, casting="unsafe")
        plane += b[channel]


def _floats(values: Channels) -> Tuple[float, ...]:
    if isinstance(values, (int, float, np.number)):
        return (float(values),)
    return tuple(float(v) for v in np.ravel(values))


def coefficients_of(scale: float, mean: Any, std: Any, channels: int) -> Coefficients:
    """:func:`affine` for the arguments as given: hashable ones (numbers, tuples: the usual
    case) are looked up without converting them first, which cost more than the pixels of a
    small image; lists and arrays are converted."""
    try:
        return _affine_as_given(scale, mean, std, channels)
    except TypeError:  # unhashable: a list or an array
        return affine(float(scale), _floats(mean), _floats(std), channels)


@lru_cache(maxsize=64)
def _affine_as_given(scale: float, mean: Any, std: Any, channels: int) -> Coefficients:
    return affine(float(scale), _floats(mean), _floats(std), channels)


@lru_cache(maxsize=64)
def affine(
    scale: float, mean: Tuple[float, ...], std: Tuple[float, ...], channels: int
) -> Coefficients:
    """(x * scale - mean) / std == x * a + b, per channel: (a, b), computed once per setting
    (for small images, computing them on every call cost more than the pixels)."""
    std64 = np.asarray(std, np.float64)
    a = np.broadcast_to(np.asarray(scale / std64, np.float32), (channels,))
    b = np.broadcast_to(np.asarray(-np.asarray(mean, np.float64) / std64, np.float32), (channels,))
    return a, b
