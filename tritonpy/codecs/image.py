"""``Image``: encoded images (PNG, JPEG, BMP, WebP... anything OpenCV reads) as uint8 arrays."""

from __future__ import annotations

from functools import cache
from typing import Any, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import DeclarationError, InputError
from ._image_size import image_size
from .base import MISSING, ElementCodec

__all__ = ["Image", "image_size"]

_COLORS = ("RGB", "BGR", "GRAY")
DEFAULT_MAX_PIXELS = 40_000_000  # 40 megapixels: far above any camera frame a model expects


@cache
def _cv2() -> Any:
    try:
        import cv2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DeclarationError(
            "tritonpy.Image needs OpenCV, which is not installed in this environment: "
            "pip install 'tritonpy[image]' (opencv-python-headless) in the model's environment"
        ) from exc
    return cv2


class Image(ElementCodec):
    """Encoded images in TYPE_STRING elements, decoded with OpenCV to ``uint8`` arrays of
    shape ``H x W x C`` (C = 3 for ``"RGB"``/``"BGR"``, 1 for ``"GRAY"``).

    Images larger than ``max_pixels`` (width x height, read from the header before decoding
    for PNG, JPEG, BMP, PNM, WebP, GIF, TIFF, Sun raster, Radiance HDR and JPEG 2000; after
    decoding for other formats) are refused with ``INVALID_ARG``, so a decompression bomb costs
    nothing. On the output side arrays in ``color`` order are encoded to ``format``
    (``"png"``, ``"jpg"``, ``"webp"``...; ``quality`` for JPEG/WebP).

    Example::

        inputs = {"IMAGE": tp.Image(color="RGB")}
        outputs = {"THUMB": tp.Image(color="RGB", format="jpg", quality=90)}

        def infer(self, IMAGE):       # a list of H x W x 3 uint8 arrays, one per row
            return {"THUMB": [cv2.resize(im, (64, 64)) for im in IMAGE]}

    Needs ``opencv-python-headless`` (``pip install 'tritonpy[image]'``).
    """

    describes = "an encoded image (PNG, JPEG, ...)"
    array_elements = True

    def __init__(
        self,
        color: str = "RGB",
        dims: Sequence[int] = (1,),
        *,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        format: str = "png",
        quality: Optional[int] = None,
        optional: bool = False,
        default: Any = MISSING,
    ) -> None:
        super().__init__(dims, optional=optional, default=default)
        color = color.upper()
        if color not in _COLORS:
            raise DeclarationError(f"Image(color={color!r}): expected one of {list(_COLORS)}")
        self.color = color
        self.max_pixels = int(max_pixels)
        self.format = "." + format.lower().lstrip(".")
        self.quality = quality

    def decode_element(self, data: bytes) -> NDArray[Any]:
        if not data:
            raise ValueError("the element is empty")
        size = image_size(data)
        if size is not None and size[0] * size[1] > self.max_pixels:
            raise InputError(
                f"image of {size[0]}x{size[1]} = {size[0] * size[1]} pixels exceeds the limit "
                f"of {self.max_pixels} pixels; send a smaller image or raise "
                f"Image(max_pixels=...)"
            )
        cv2 = _cv2()
        buffer = np.frombuffer(data, dtype=np.uint8)
        try:
            image = cv2.imdecode(buffer, self._flag(cv2))
        except cv2.error as exc:
            # OpenCV asserts on some hostile headers (a size over its own limit) instead of
            # returning None: still the request's fault, not the model's
            reason = str(exc).strip().splitlines()[-1][:160]
            raise ValueError(f"OpenCV refused it: {reason}") from None
        if image is None:
            raise ValueError("OpenCV could not decode it")
        if size is None and image.shape[0] * image.shape[1] > self.max_pixels:
            raise InputError(
                f"image of {image.shape[1]}x{image.shape[0]} pixels exceeds the limit of "
                f"{self.max_pixels} pixels; send a smaller image or raise Image(max_pixels=...)"
            )
        if self.color == "RGB" and self._flag(cv2) == cv2.IMREAD_COLOR:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
        elif self.color == "GRAY":
            image = image[:, :, None]
        return image  # type: ignore[no-any-return]

    def _flag(self, cv2: Any) -> int:
        if self.color == "GRAY":
            return int(cv2.IMREAD_GRAYSCALE)
        if self.color == "RGB":
            # OpenCV >= 4.10 decodes straight to RGB; older ones decode BGR and convert (a
            # cvtColor that also wakes OpenCV's thread pool: measurable CPU under load)
            return int(getattr(cv2, "IMREAD_COLOR_RGB", cv2.IMREAD_COLOR))
        return int(cv2.IMREAD_COLOR)

    def encode_element(self, value: Any) -> bytes:
        cv2 = _cv2()
        image = np.asarray(value)
        if image.dtype != np.uint8:
            raise TypeError(f"expected a uint8 array, got dtype {image.dtype}")
        if image.ndim == 3 and image.shape[2] == 3 and self.color == "RGB":
            image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        elif image.ndim == 3 and image.shape[2] == 1:
            image = image[:, :, 0]
        params = []
        if self.quality is not None:
            if self.format in (".jpg", ".jpeg"):
                params = [cv2.IMWRITE_JPEG_QUALITY, int(self.quality)]
            elif self.format == ".webp":
                params = [cv2.IMWRITE_WEBP_QUALITY, int(self.quality)]
        ok, encoded = cv2.imencode(self.format, image, params)
        if not ok:
            raise ValueError(f"OpenCV could not encode a {image.shape} array as {self.format}")
        return encoded.tobytes()  # type: ignore[no-any-return]
