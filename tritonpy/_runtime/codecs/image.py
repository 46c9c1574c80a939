"""``Image``: encoded images (PNG, JPEG, BMP, WebP... anything OpenCV reads) as uint8 arrays."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any, List, Literal, Optional, Sequence, Tuple, get_args

import numpy as np
from numpy.typing import NDArray

from .._config_parameters import defer_config_arguments
from .._optional import codec_dependency
from ..errors import DeclarationError, InputError
from ._image_decode import (
    MAX_THREADS,
    PARALLEL_MIN_BYTES,
    HeaderSize,
    Undecoded,
    decode_rows,
    reduced_factor,
)
from ._image_size import image_size
from ._normalize import Normalize, write_chw
from ._plan import CODEC, CodecPlan
from .base import MISSING, ElementCodec

#: the channel orders an Image decodes to and encodes from (case does not matter at run time)
ImageColor = Literal["RGB", "BGR", "GRAY"]
_COLORS: Tuple[str, ...] = get_args(ImageColor)
DEFAULT_MAX_PIXELS = 40_000_000  # 40 megapixels: far above any camera frame a model expects


@cache
def _cv2() -> Any:
    return codec_dependency("cv2", codec="Image", library="OpenCV")


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

    Decoding straight to the size the model needs (inputs only): with ``size=(width,
    height)`` every image is resized right after it is decoded, while its pixels are still in
    cache (``interpolation``: an OpenCV flag, default ``cv2.INTER_LINEAR``), so ``infer`` gets
    images of exactly that size. Where that size is at most half of a JPEG's,
    ``reduced_decode=True`` (default) lets the JPEG decoder decode at 1/2, 1/4 or 1/8 of the
    size first (DCT scaling), which costs less; the pixels then differ a little from an exact
    full-size decode and resize (measured on photos, 640x480 -> 224x224: mean absolute
    difference about 4 of 255 levels, the same order as switching INTER_LINEAR for
    INTER_AREA; see docs/codecs.md). ``reduced_decode=False`` gives the exact path. With
    batching, the images of all requests of one batch are decoded together on up to
    ``threads`` threads (default: the usable cores, at most 4; 1 decodes on the calling
    thread), since OpenCV releases the GIL::

        inputs = {"IMAGE": tp.Image(color="RGB", size=(224, 224))}

    Decoding straight into the tensor the network takes: with ``normalize=`` (a
    :class:`tp.vision.Normalize <tritonpy.vision.Normalize>`, needs ``size``) each image is
    also normalised on its decoding thread, straight into its row of a float32 batch, so
    ``infer`` gets one ``N x C x height x width`` array instead of a list (a single ``C x
    height x width`` array without batching); the pixels equal those of
    :func:`tp.vision.to_chw_batch <tritonpy.vision.to_chw_batch>` on the decoded images::

        IMAGENET = tp.vision.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
        inputs = {"IMAGE": tp.Image(color="RGB", size=(224, 224), normalize=IMAGENET)}

    Any argument but ``dims`` may name a ``config.pbtxt`` parameter instead of a value, with
    :func:`tp.config_parameter <tritonpy.config_parameter>` (as may ``Normalize``'s ``mean``
    and ``std``): the codec is built with the defaults when the class is defined, and again
    with the configured values when the model loads::

        inputs = {"IMAGE": tp.Image(
            color=tp.config_parameter("color", "RGB"),
            size=tp.config_parameter("size", (224, 224), cast=tp.parameters.size))}

    Needs ``opencv-python-headless`` (``pip install 'tritonpy[image]'``).
    """

    describes = "an encoded image (PNG, JPEG, ...)"
    array_elements = True

    def __init__(
        self,
        color: ImageColor = "RGB",
        dims: Sequence[int] = (1,),
        *,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        format: str = "png",
        quality: Optional[int] = None,
        size: Optional[Tuple[int, int]] = None,
        interpolation: Optional[int] = None,
        reduced_decode: bool = True,
        threads: Optional[int] = None,
        normalize: Optional[Normalize] = None,
        optional: bool = False,
        default: Any = MISSING,
    ) -> None:
        if defer_config_arguments(self, Image.__init__, locals()):
            return  # built from the parameters' defaults; initialize rebuilds it from config
        super().__init__(dims, optional=optional, default=default)
        upper = str(color).upper()
        if upper not in _COLORS:
            raise DeclarationError(f"Image(color={upper!r}): expected one of {list(_COLORS)}")
        self.color = upper
        self.max_pixels = int(max_pixels)
        self.format = "." + format.lower().lstrip(".")
        self.quality = quality
        self.size = _checked_size(size)
        self.interpolation = interpolation
        self.reduced_decode = bool(reduced_decode)
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise DeclarationError(
                f"Image(threads={threads!r}): expected a positive number of threads, or None "
                f"for the usable cores (at most {MAX_THREADS})"
            )
        self.threads = threads
        self.normalize = normalize
        self._channels = 1 if self.color == "GRAY" else 3
        self._coefficients = _checked_normalize(
            normalize, self.size, self._channels, default is not MISSING and default is not None
        )
        # a subclass that overrides decode_element decodes merged rows its own way too
        self._own_decode = type(self).decode_element is not Image.decode_element
        # (imread flag, convert BGR to RGB after decoding, resize interpolation): worked out
        # on the first image, when OpenCV is imported
        self._reading: Optional[Tuple[int, bool, int]] = None

    def check_output_declaration(self, name: str) -> None:
        super().check_output_declaration(name)
        if self.normalize is not None:
            raise DeclarationError(
                f"output {name!r}: Image(normalize=...) normalises decoded inputs; an output "
                f"is encoded from uint8 pixels: remove normalize= and size="
            )
        if self.size is not None:
            raise DeclarationError(
                f"output {name!r}: Image(size=...) resizes decoded inputs; an output is "
                f"encoded as infer() returns it: remove size= (resize in infer)"
            )

    # -- inputs ------------------------------------------------------------------------------
    def decode(self, name: str, tensor: Any, batched: bool) -> Any:
        if not (batched and self._single):
            return super().decode(name, tensor, batched)
        # Batched rows are only screened here (empty, too many pixels: refused at once, so a
        # bad request stays out of the batch); merge() decodes the rows of every request
        # of the batch together
        rows = tensor.as_numpy().reshape(-1).tolist()
        sizes = []
        for position, data in enumerate(rows):
            try:
                sizes.append(self._screen(data))
            except (InputError, ValueError, TypeError) as exc:
                raise self.element_error(name, f"row {position}", data, exc) from None
        return Undecoded(name, rows, sizes)

    def merge(self, values: Sequence[Any]) -> Any:
        if self._coefficients is None or not self._single:
            return decode_rows(values, self._decode_row, self.threads)
        # every row decoded, resized and normalised on its thread, straight into the batch
        ab, row_shape = self._coefficients
        batch = np.empty((sum(len(value) for value in values), *row_shape), np.float32)

        def decode_into(name: str, position: int, data: bytes, size: HeaderSize, row: int) -> None:
            pixels = self._decode_pixels(name, position, data, size)
            if self._own_decode:  # a subclass's decode_element gives the finished row
                batch[row] = pixels
            else:
                write_chw(pixels, batch[row], ab)

        decode_rows(values, decode_into, self.threads)
        return batch

    def plan(self, batched: bool) -> CodecPlan:
        plan = super().plan(batched)
        own = type(self)
        if (
            not (batched and self._single)
            or self.optional
            or self._own_decode
            or own.decode is not Image.decode
            or own.merge is not Image.merge
        ):
            return plan
        return replace(
            plan, read=CODEC, decode_one=self._decode_alone, decode_many=self._decode_merged
        )

    # The plan's decoding (see CodecPlan): what decode() and merge() give, in one call;
    # an error raises and the general path, which words it, takes over
    def _decode_alone(self, name: str, tensor: Any, batched: bool) -> Any:
        """``merge([decode(name, tensor, batched)])`` of a batched request alone."""
        rows = tensor.as_numpy().reshape(-1)
        if len(rows) != 1:
            return self._decode_merged(name, [tensor])[0]
        data = rows[0]  # the usual request: one image
        pixels = self._decode_screened(data, self._screen(data))
        if self._coefficients is None:
            return [pixels]
        ab, row_shape = self._coefficients
        batch = np.empty((1, *row_shape), np.float32)
        write_chw(pixels, batch[0], ab)
        return batch

    def _decode_merged(self, name: str, tensors: Sequence[Any]) -> Tuple[Any, List[int]]:
        """``merge([decode(name, tensor, True) for tensor in tensors])`` and the rows of
        each: small images one after the other on this thread, large ones as merge() does."""
        flat: List[Any] = []
        counts: List[int] = []
        for tensor in tensors:
            rows = tensor.as_numpy().reshape(-1)
            counts.append(len(rows))
            flat.extend(rows)
        if len(flat) > 1 and sum(map(len, flat)) >= PARALLEL_MIN_BYTES:
            return self.merge([self.decode(name, tensor, True) for tensor in tensors]), counts
        if self._coefficients is None:
            images = []
            for data in flat:  # (a loop: no comprehension call)
                images.append(self._decode_screened(data, self._screen(data)))
            return images, counts
        ab, row_shape = self._coefficients
        batch = np.empty((len(flat), *row_shape), np.float32)
        for row, data in enumerate(flat):
            write_chw(self._decode_screened(data, self._screen(data)), batch[row], ab)
        return batch, counts

    def _decode_row(
        self, name: str, position: int, data: bytes, size: HeaderSize, row: int = 0
    ) -> NDArray[Any]:
        pixels = self._decode_pixels(name, position, data, size)
        return pixels if self._own_decode else self._normalized(pixels)

    def _decode_pixels(self, name: str, position: int, data: bytes, size: HeaderSize) -> Any:
        """The row decoded: by a subclass's ``decode_element`` (its finished value), else the
        library's uint8 pixels, before any normalisation."""
        try:
            if self._own_decode:
                return self.decode_element(data)
            return self._decode_screened(data, size)
        except (InputError, ValueError, TypeError) as exc:
            raise self.element_error(name, f"row {position}", data, exc) from None

    def _normalized(self, image: NDArray[Any]) -> NDArray[Any]:
        """``image`` as ``normalize`` asks (a new C x H x W float32 array), or itself."""
        if self._coefficients is None:
            return image
        ab, row_shape = self._coefficients
        out = np.empty(row_shape, np.float32)
        write_chw(image, out, ab)
        return out

    def _screen(self, data: Any) -> Optional[Tuple[int, int]]:
        """The image's size from its header (None if unknown); refuse empty or huge ones."""
        if not isinstance(data, bytes):
            raise TypeError(f"expected bytes, got {type(data).__name__}")
        if not data:
            raise ValueError("the element is empty")
        size = image_size(data)
        if size is not None and size[0] * size[1] > self.max_pixels:
            raise InputError(
                f"image of {size[0]}x{size[1]} = {size[0] * size[1]} pixels exceeds the limit "
                f"of {self.max_pixels} pixels; send a smaller image or raise "
                f"Image(max_pixels=...)"
            )
        return size

    def decode_element(self, data: bytes) -> NDArray[Any]:
        return self._normalized(self._decode_screened(data, self._screen(data)))

    def _decode_screened(self, data: bytes, size: HeaderSize) -> NDArray[Any]:
        """``data`` decoded, once :meth:`_screen` has passed it and read its ``size``."""
        cv2 = _cv2()
        buffer = np.frombuffer(data, dtype=np.uint8)
        flag, to_rgb, interpolation = self._reading or self._plan_reading(cv2)
        if (
            self.size is not None
            and self.reduced_decode
            and size is not None
            and data[:2] == b"\xff\xd8"  # JPEG: other decoders would decode full size anyway
        ):
            flag |= _REDUCED_FLAGS[reduced_factor(size, self.size)]
        try:
            image = cv2.imdecode(buffer, flag)
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
        if self.size is not None and (image.shape[1], image.shape[0]) != self.size:
            image = cv2.resize(image, self.size, interpolation=interpolation)
        if to_rgb:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
        elif self.color == "GRAY":
            image = image[:, :, None]
        return image  # type: ignore[no-any-return]

    def _plan_reading(self, cv2: Any) -> Tuple[int, bool, int]:
        flag = self._flag(cv2)
        interpolation = cv2.INTER_LINEAR if self.interpolation is None else self.interpolation
        self._reading = (flag, self.color == "RGB" and flag == cv2.IMREAD_COLOR, interpolation)
        return self._reading

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


#: the bits that turn an IMREAD_COLOR/GRAYSCALE/COLOR_RGB flag into its reduced variant
#: (IMREAD_REDUCED_COLOR_2 == IMREAD_COLOR | 16, and so on)
_REDUCED_FLAGS = {1: 0, 2: 16, 4: 32, 8: 64}


def _checked_size(size: Any) -> Optional[Tuple[int, int]]:
    if size is None:
        return None
    try:
        width, height = (int(v) for v in size)
        ok = width > 0 and height > 0 and all(float(v) == int(v) for v in size)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise DeclarationError(
            f"Image(size={size!r}): expected (width, height) in pixels, two positive integers, "
            f"e.g. size=(224, 224)"
        )
    return width, height


def _checked_normalize(
    normalize: Optional[Normalize],
    size: Optional[Tuple[int, int]],
    channels: int,
    has_default: bool,
) -> Any:
    """The normalisation coefficients of ``Image(normalize=...)`` and the shape of one
    normalised image (C x height x width); None without normalize."""
    if normalize is None:
        return None
    if not isinstance(normalize, Normalize):
        raise DeclarationError(
            f"Image(normalize={normalize!r}): expected a tp.vision.Normalize(mean=..., std=...)"
        )
    if size is None:
        raise DeclarationError(
            "Image(normalize=...) needs size=(width, height): the images of a batch are "
            "normalised into one array, so they must all have one size"
        )
    if has_default:
        raise DeclarationError(
            "Image(normalize=...) with a default image: not supported; declare "
            "optional=True without default= and handle None in infer()"
        )
    return normalize.coefficients(channels), (channels, size[1], size[0])
