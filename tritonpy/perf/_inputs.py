"""Valid request inputs for a load test, from the model's configuration as the server reports
it, refined by what is known of its inputs.

The served configuration says only ``TYPE_STRING`` for a BYTES input; what the model expects
in it (an encoded image, UTF-8 text, a JSON document) comes, in this order, from:

1. the user: ``--input NAME=FILE`` (a BYTES input gets the file's bytes as one element, a
   numeric input a ``.npy`` file or a JSON list), or ``--input NAME=KIND`` with KIND ``image``,
   ``image:WxH``, ``text``, ``json``, ``zeros``, ``random``;
2. the model's tritonpy declarations when its directory is known (``tritonpy tune``, or
   ``tritonpy perf --model-dir``): ``tp.Image`` -> image, ``tp.Text`` -> text, ``tp.JSON`` ->
   json, ``tp.Bytes`` -> text;
3. the input's name: one containing IMAGE, IMG, JPEG, PNG, PHOTO or PICTURE -> image, JSON ->
   json, anything else -> text.

Numeric inputs get random values of the declared dtype (integers 0..99, floats in [0, 1),
booleans); a dynamic dimension (-1) becomes :data:`DYNAMIC_DIM` unless ``--shape NAME=d,d``
says otherwise, and a batching model gets a batch dimension of 1.

Example::

    config = {"name": "m", "max_batch_size": 8, "input": [
        {"name": "IMAGE", "data_type": "TYPE_STRING", "dims": [1]},
        {"name": "SCALE", "data_type": "TYPE_FP32", "dims": [-1]}]}
    payloads = generate_payloads(config, count=2)
    payloads[0]["IMAGE"].shape, payloads[0]["SCALE"].shape     # (1, 1) (1, 16)
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from .._runtime.dtypes import lookup_dtype
from .._runtime.errors import DeclarationError, ToolError

#: what a dynamic dimension (-1) becomes when no --shape is given
DYNAMIC_DIM = 16
#: the kinds of generated data a BYTES input can get
KINDS = ("image", "text", "json", "zeros", "random")
DEFAULT_IMAGE_SIZE = (320, 240)
_IMAGE_WORDS = ("IMAGE", "IMG", "JPEG", "JPG", "PNG", "PHOTO", "PICTURE")
_TEXT = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "the",
    "server",
    "counts",
]


class PerfInputError(ToolError):
    """An input of the load test cannot be built (an unknown input name, an unreadable file, a
    value that does not fit the input's dtype)."""


@dataclass(frozen=True)
class InputSpec:
    """How one input is filled: ``kind`` (one of :data:`KINDS`, or ``"file"`` with ``path``),
    ``size`` for images (width, height)."""

    kind: str
    path: Optional[Path] = None
    size: Tuple[int, int] = DEFAULT_IMAGE_SIZE


def parse_input_option(text: str) -> Tuple[str, InputSpec]:
    """Read one ``--input NAME=FILE`` or ``--input NAME=KIND`` option.

    Example::

        parse_input_option("IMAGE=image:640x480")  # ('IMAGE', InputSpec('image', size=(640, 480)))
        parse_input_option("IMAGE=cat.jpg")         # ('IMAGE', InputSpec('file', Path('cat.jpg')))
    """
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise PerfInputError(
            f"--input {text!r}: expected NAME=FILE or NAME=KIND (KIND one of "
            f"{', '.join(KINDS)}, image:WxH). Example: --input IMAGE=cat.jpg"
        )
    kind, _, size = value.partition(":")
    if kind in KINDS and (not size or kind == "image"):
        if size:
            return name, InputSpec("image", size=_parse_size(size, text))
        return name, InputSpec(kind)
    path = Path(value[1:] if value.startswith("@") else value)
    if not path.is_file():
        raise PerfInputError(
            f"--input {text!r}: {str(path)!r} is neither an existing file nor a kind "
            f"({', '.join(KINDS)}, image:WxH). Give the path of a file to send."
        )
    return name, InputSpec("file", path=path)


def _parse_size(text: str, option: str) -> Tuple[int, int]:
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height if sep else width))
    except ValueError:
        size = (0, 0)
    if size[0] <= 0 or size[1] <= 0:
        raise PerfInputError(
            f"--input {option!r}: image size {text!r} must be WIDTHxHEIGHT in pixels, e.g. "
            "image:640x480."
        )
    return size


def parse_shape_option(text: str) -> Tuple[str, Tuple[int, ...]]:
    """Read one ``--shape NAME=d1,d2`` option (the input's dims without the batch dimension).

    Example::

        parse_shape_option("LOGITS=1000")      # ('LOGITS', (1000,))
    """
    name, sep, value = text.partition("=")
    try:
        dims = tuple(int(d) for d in value.split(",")) if sep and name else ()
    except ValueError:
        dims = ()
    if not dims or any(d <= 0 for d in dims):
        raise PerfInputError(
            f"--shape {text!r}: expected NAME=d1,d2,... with positive dims (the batch "
            "dimension left out). Example: --shape LOGITS=1000"
        )
    return name, dims


def guess_kind(name: str) -> str:
    """The kind of data a BYTES input named ``name`` most likely wants (see the module's
    docstring, rule 3)."""
    upper = name.upper()
    if any(word in upper for word in _IMAGE_WORDS):
        return "image"
    if "JSON" in upper:
        return "json"
    return "text"


def hints_from_class(cls: Any) -> Dict[str, str]:
    """The kind of each BYTES input declared by the tritonpy model class ``cls``
    (``inputs = {...}``): image, text or json; inputs of other codecs are left out."""
    from .._runtime.codecs.image import Image
    from .._runtime.codecs.json_codec import JSON
    from .._runtime.codecs.text import Bytes, Text

    kinds: Dict[str, str] = {}
    for name, codec in (getattr(cls, "inputs", None) or {}).items():
        if isinstance(codec, Image):
            kinds[str(name)] = "image"
        elif isinstance(codec, JSON):
            kinds[str(name)] = "json"
        elif isinstance(codec, (Text, Bytes)):
            kinds[str(name)] = "text"
    return kinds


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode_png(pixels: NDArray[np.uint8]) -> bytes:
    """Encode an (H, W, 3) uint8 RGB array as PNG (zlib, no filter): every image decoder
    reads it, and it needs nothing beyond numpy and the stdlib."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
        raise PerfInputError(
            f"encode_png: expected an (H, W, 3) uint8 array, got {pixels.dtype} "
            f"{list(pixels.shape)}."
        )
    height, width = pixels.shape[:2]
    rows = np.concatenate([np.zeros((height, 1), np.uint8), pixels.reshape(height, -1)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _png_chunk(b"IEND", b"")
    )


def sample_image(size: Tuple[int, int] = DEFAULT_IMAGE_SIZE, seed: int = 0) -> bytes:
    """A PNG of ``size`` (width, height): smooth colour gradients with a little noise, so the
    decoder does real work and the file stays photo-like in size."""
    width, height = size
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    red = 255 * xs / max(width - 1, 1)
    green = 255 * ys / max(height - 1, 1)
    blue = 127 + 127 * np.sin((xs + ys) / 17.0)
    image = np.stack([red, green, blue], axis=-1) + rng.normal(0, 6, (height, width, 3))
    return encode_png(np.clip(image, 0, 255).astype(np.uint8))


def _element(kind: str, rng: np.random.Generator, spec: InputSpec) -> bytes:
    if kind == "image":
        return sample_image(spec.size, seed=int(rng.integers(0, 1 << 16)))
    words = [str(w) for w in rng.choice(_TEXT, size=8)]
    if kind == "json":
        return json.dumps({"text": " ".join(words), "value": int(rng.integers(0, 100))}).encode()
    if kind == "zeros":
        return b""
    return " ".join(words).encode("utf-8")


def _numeric(
    dtype: np.dtype[Any], shape: Tuple[int, ...], kind: str, rng: np.random.Generator
) -> NDArray[Any]:
    if kind == "zeros":
        return np.zeros(shape, dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 100, size=shape).astype(dtype)
    return rng.random(size=shape).astype(dtype)


def _from_file(
    name: str, path: Path, dtype: np.dtype[Any], shape: Tuple[int, ...], batching: bool
) -> NDArray[Any]:
    if dtype == np.object_:
        return np.full(shape, path.read_bytes(), dtype=np.object_)
    try:
        if path.suffix == ".npy":
            array = np.load(path, allow_pickle=False)
        else:
            array = np.array(json.loads(path.read_text("utf-8")))
        array = np.asarray(array, dtype=dtype)
    except (OSError, ValueError, TypeError) as exc:
        problem = f"cannot read {str(path)!r} as a {dtype} tensor: {exc}"
        fix = "Give a .npy file or a JSON list of numbers."
        raise PerfInputError(f"input {name!r}: {problem}. {fix}") from exc
    if batching and array.ndim == len(shape) - 1:
        array = array[np.newaxis, ...]  # the batch dimension of a batching model
    return array


def generate_payloads(
    config: Mapping[str, Any],
    *,
    count: int = 8,
    specs: Optional[Mapping[str, InputSpec]] = None,
    hints: Optional[Mapping[str, str]] = None,
    shapes: Optional[Mapping[str, Sequence[int]]] = None,
    seed: int = 0,
) -> List[Dict[str, NDArray[Any]]]:
    """``count`` request payloads (``{input name: array}``) for the model whose configuration
    (JSON form, as ``/config`` returns it) is ``config``; optional inputs are sent only when
    ``specs`` names them. See the module's docstring for how each input is filled.
    """
    model = str(config.get("name", ""))
    entries = {str(e["name"]): e for e in config.get("input", [])}
    specs = dict(specs or {})
    shapes = dict(shapes or {})
    unknown = [n for n in [*specs, *shapes] if n not in entries]
    if unknown:
        raise PerfInputError(
            f"model {model!r} has no input(s) {', '.join(map(repr, sorted(set(unknown))))}; its "
            f"inputs are {', '.join(entries) or 'none'}. Fix the --input/--shape names."
        )
    batching = int(config.get("max_batch_size", 0) or 0) > 0
    rng = np.random.default_rng(seed)
    payloads: List[Dict[str, NDArray[Any]]] = [{} for _ in range(max(count, 1))]
    for name, entry in entries.items():
        if entry.get("optional", False) and name not in specs:
            continue
        try:
            dtype_info = lookup_dtype(str(entry.get("data_type", "TYPE_INVALID")))
        except DeclarationError as exc:
            raise PerfInputError(f"model {model!r} input {name!r}: {exc}") from exc
        dtype = np.dtype(np.object_) if dtype_info.is_bytes else dtype_info.numpy
        if dtype is None:
            dtype = np.dtype(np.float32)  # BF16: tritonclient converts from float32
        declared = [int(d) for d in entry.get("dims", [])]
        fill = 1 if dtype_info.is_bytes else DYNAMIC_DIM  # one string element per row
        dims = (
            tuple(shapes[name]) if name in shapes else tuple(fill if d < 0 else d for d in declared)
        )
        shape = ((1,) if batching else ()) + dims
        spec = specs.get(name) or InputSpec((hints or {}).get(name) or guess_kind(name))
        if not dtype_info.is_bytes and spec.kind not in ("file", "zeros", "random"):
            spec = InputSpec("random")
        for payload in payloads:
            if spec.kind == "file" and spec.path is not None:
                payload[name] = _from_file(name, spec.path, dtype, shape, batching)
            elif dtype_info.is_bytes:
                size = int(np.prod(shape, dtype=np.int64))
                elements = [_element(spec.kind, rng, spec) for _ in range(size)]
                payload[name] = np.array(elements, dtype=np.object_).reshape(shape)
            else:
                payload[name] = _numeric(dtype, shape, spec.kind, rng)
    return payloads
