"""Image pre-processing helpers that do the fast thing by default.

The naive way to turn decoded images into a normalised ``N x C x H x W`` float batch,
``((np.stack(images) / 255 - mean) / std).transpose(0, 3, 1, 2)``, allocates four temporary
arrays and ends with a strided copy. :func:`to_chw_batch` writes each channel of each image
straight into a preallocated CHW output with one fused multiply-add, which is several times
faster on the same core.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from ._runtime._public_names import publish as _publish
from ._runtime.codecs._normalize import Normalize, coefficients_of, write_chw
from ._runtime.errors import InputError

__all__ = ["Normalize", "to_chw_batch"]

Size = Tuple[int, int]


def to_chw_batch(
    images: Sequence[NDArray[Any]],
    size: Optional[Size] = None,
    *,
    mean: Union[float, Sequence[float]] = 0.0,
    std: Union[float, Sequence[float]] = 1.0,
    scale: float = 1.0 / 255.0,
    interpolation: Optional[int] = None,
    out: Optional[NDArray[np.float32]] = None,
) -> NDArray[np.float32]:
    """Resize ``H x W x C`` uint8 images to ``size`` = (width, height) and return
    ``(pixel * scale - mean) / std`` as a float32 ``N x C x height x width`` batch.

    ``mean`` and ``std`` are per channel (in the images' channel order) or scalars. Without
    ``size`` every image must already have the same height and width. ``interpolation`` is an
    OpenCV flag (default ``cv2.INTER_LINEAR``); OpenCV is only imported when resizing.

    Example, ImageNet normalisation in a preprocessing model::

        def infer(self, IMAGE):                  # list of H x W x 3 RGB arrays
            return {"PIXELS": tp.vision.to_chw_batch(
                IMAGE, (224, 224), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))}
    """
    if size is None:
        if not images:
            raise InputError("to_chw_batch: no images and no size given; pass size=(w, h)")
        height, width = images[0].shape[:2]
    else:
        width, height = int(size[0]), int(size[1])
    channels = _channels(images[0]) if images else len(np.atleast_1d(mean))
    result = (
        out if out is not None else np.empty((len(images), channels, height, width), np.float32)
    )
    ab = coefficients_of(scale, mean, std, channels)
    ready = (height, width, channels)
    for index, image in enumerate(images):
        if image.shape != ready:  # (an Image codec with size= gives them ready)
            image = _sized(index, image, channels, (width, height), size is not None, interpolation)
        write_chw(image, result[index], ab)
    return result


def _sized(
    index: int,
    image: NDArray[Any],
    channels: int,
    size: Size,
    resize: bool,
    interpolation: Optional[int],
) -> NDArray[Any]:
    """Image ``index`` as ``H x W x C`` of the batch's ``size`` = (width, height): resized
    when ``resize`` (OpenCV, imported only then), else an InputError when it differs."""
    if image.ndim == 2:
        image = image[:, :, None]
    if _channels(image) != channels:
        raise InputError(
            f"to_chw_batch: image {index} has {_channels(image)} channels, expected "
            f"{channels} like the first image"
        )
    width, height = size
    if image.shape[0] == height and image.shape[1] == width:
        return image
    if not resize:
        raise InputError(
            f"to_chw_batch: image {index} is {image.shape[1]}x{image.shape[0]}, "
            f"expected {width}x{height} like the first image; pass size=(w, h) to resize"
        )
    import cv2

    flag = cv2.INTER_LINEAR if interpolation is None else interpolation
    resized: NDArray[Any] = cv2.resize(image, (width, height), interpolation=flag)
    return resized[:, :, None] if resized.ndim == 2 else resized


def _channels(image: NDArray[Any]) -> int:
    return 1 if image.ndim == 2 else int(image.shape[2])


# Normalize is written beside the Image codec that applies it
_publish(__name__, globals(), adopt=["Normalize"])
