"""Property-based fuzz of every codec's decode path, driven through ModelHarness.

Requests are built from random data types, shapes and byte strings (wrong dtypes and shapes
included, and hostile bytes for BYTES inputs: invalid UTF-8, truncated images, headers that
declare huge sizes, NaN, deeply nested JSON). Whatever arrives, a request must end in outputs
or in an ``INVALID_ARG`` error: never ``INTERNAL`` (a codec crashing on data) and never an
exception escaping the harness.

The runs are deterministic (``derandomize=True``, no example database) and small enough for CI.
hypothesis is a dev dependency: the extra-interpreter runtime runs, which install the runtime's
dependencies only, skip this module.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

hypothesis = pytest.importorskip(
    "hypothesis", reason="hypothesis (a dev dependency) is not installed in this environment"
)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tritonpy as tp  # noqa: E402
from tritonpy.testing import HarnessError, ModelHarness  # noqa: E402

FUZZ = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

NUMERIC = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"]
NUMERIC += ["FP16", "FP32", "FP64"]
NUMPY_DTYPES = [np.dtype(t) for t in ("?", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8")]
NUMPY_DTYPES += [np.dtype(t) for t in ("f2", "f4", "f8")]

Result = Any  # outputs (a dict) or a TritonRequestError


def assert_answered(result: Result) -> None:
    """A request's result is its outputs, or an INVALID_ARG that names what was wrong (or the
    harness's refusal of a request the real server does not answer, before the model ran)."""
    if isinstance(result, tp.TritonRequestError):
        assert result.code == "INVALID_ARG", f"{result.code}: {result.message}"
        assert result.message, "an INVALID_ARG without a message"
    elif not isinstance(result, HarnessError):
        assert isinstance(result, dict), f"neither outputs nor an error: {result!r}"


def infer_one(harness: ModelHarness, inputs: Dict[str, Any]) -> Result:
    return infer_many(harness, [inputs])[0]


def infer_many(harness: ModelHarness, requests: List[Dict[str, Any]]) -> List[Result]:
    """Results of ``requests`` sent in one execute() (one ``infer`` for a single request)."""
    calls = harness.execute_calls
    try:
        if len(requests) == 1:
            try:
                return [harness.infer(requests[0])]
            except tp.TritonRequestError as exc:
                return [exc]
        return list(harness.infer_requests(requests))
    except HarnessError as exc:
        # the harness names the rule where the real server would hang instead of answering:
        # allowed before the model ran, never after (that would be the model's crash)
        assert harness.execute_calls == calls, f"HarnessError after execute(): {exc}"
        return [exc] * len(requests)


# -- models ---------------------------------------------------------------------------------


def echo(codec: tp.Codec, max_batch_size: int, out: Optional[tp.Codec] = None) -> type:
    class Echo(tp.Model):
        inputs = {"IN": codec}
        outputs = {"OUT": out or codec}

        def infer(self, IN: Any) -> Dict[str, Any]:
            return {"OUT": IN}

    Echo.max_batch_size = max_batch_size  # type: ignore[misc]
    return Echo


def counting(codec: tp.Codec, max_batch_size: int) -> type:
    """A model that only counts what it got: the element codecs whose values do not echo
    (images of any size) end here."""

    class Count(tp.Model):
        inputs = {"IN": codec}
        outputs = {"N": tp.Tensor("INT64", [1])}

        def infer(self, IN: Any) -> Dict[str, Any]:
            if max_batch_size:
                return {"N": np.ones((len(IN), 1), np.int64)}
            return {"N": np.ones(1, np.int64)}

    Count.max_batch_size = max_batch_size  # type: ignore[misc]
    return Count


_harnesses: Dict[Tuple[Any, ...], ModelHarness] = {}


def harness_for(key: Tuple[Any, ...], build: Callable[[], type]) -> ModelHarness:
    """One harness per model shape for the whole module: loading a model per example would
    spend the time budget on set-up instead of requests."""
    harness = _harnesses.get(key)
    if harness is None:
        harness = _harnesses[key] = ModelHarness(build(), name=f"fuzz_{len(_harnesses)}")
    return harness


@pytest.fixture(scope="module", autouse=True)
def _close_harnesses() -> Any:
    yield
    for harness in _harnesses.values():
        harness.close()
    _harnesses.clear()


# -- strategies -----------------------------------------------------------------------------

DIMS = [(2,), (-1,), (-1, 3), (2, -1), (1,)]


def shapes_near(dims: Sequence[int], batched: bool) -> Any:
    """Shapes that fit the declaration, and some that do not (wrong rank, wrong size, zero
    rows): the harness must refuse the latter as the server does."""
    fitting = st.tuples(*[st.integers(1, 4) if d == -1 else st.just(d) for d in dims])
    if batched:
        fitting = st.tuples(st.integers(0, 3), fitting).map(lambda t: (t[0], *t[1]))
    wrong = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
    return st.one_of(fitting, fitting, wrong)


def numeric_arrays(shape: Tuple[int, ...]) -> Any:
    dtype = st.sampled_from(NUMPY_DTYPES)
    return dtype.flatmap(lambda dt: hnp.arrays(dt, shape))


def _png(width: int, height: int, body: bytes = b"") -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(ihdr))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
        + body
    )


def _jpeg_sof(width: int, height: int) -> bytes:
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00"
    return b"\xff\xd8\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof + b"\xff\xd9"


def _bmp(width: int, height: int, bits: int = 24) -> bytes:
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, 0, 0, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(info), 0, 0, 14 + len(info)) + info


def _real_png() -> bytes:
    raw = b"".join(b"\x00" + bytes(range(9)) for _ in range(2))  # 3x2 RGB, filter 0
    idat = zlib.compress(raw)
    body = b"IDAT" + idat
    end = b"IEND"
    return (
        _png(3, 2)
        + struct.pack(">I", len(idat))
        + body
        + struct.pack(">I", zlib.crc32(body))
        + struct.pack(">I", 0)
        + end
        + struct.pack(">I", zlib.crc32(end))
    )


REAL_PNG = _real_png()

HOSTILE = [
    b"",
    b"\xff",
    b"\xc3\x28",  # invalid UTF-8 continuation
    b"\xed\xa0\x80",  # a UTF-16 surrogate in UTF-8
    b"\x00" * 7,
    b"NaN",
    b"[NaN, Infinity, -Infinity]",
    b'{"a": 1e999999}',
    b"9" * 5000,  # longer than Python's int-from-str limit
    b"[" * 100_000,
    b"[" * 50_000 + b"]" * 50_000,
    b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
    b'"\\ud800"',
    b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark before the document
    REAL_PNG,
    REAL_PNG[:40],
    REAL_PNG[:-13],
    _png(100_000, 100_000),
    _png(0, 0),
    _png(2**31 - 1, 2**31 - 1),
    _png(4, 4, b"\x00\x00\x00\x0dIDAT" + b"\x00" * 20),
    _jpeg_sof(60_000, 60_000),
    _jpeg_sof(0, 0),
    b"\xff\xd8\xff\xe0\xff\xff" + b"\x00" * 10,  # a segment longer than the data
    b"\xff\xd8",
    b"\xff\xd8\xff\xc0\x00",
    _bmp(30_000, 30_000),
    _bmp(-5, -5),
    _bmp(2**31 - 1, 1),
    b"P5\n30000 30000\n255\n",  # a PGM header declaring 900 megapixels
    b"P6\n99999999 99999999\n255\n",
    b"RIFF\x00\x00\x00\x00WEBPVP8 ",
    b"II*\x00\x08\x00\x00\x00",  # a TIFF header with nothing after it
    b"GIF89a\xff\xff\xff\xff",
]

element_bytes = st.one_of(
    st.sampled_from(HOSTILE),
    st.binary(max_size=64),
    st.text(max_size=20).map(lambda s: s.encode("utf-8")),
    st.builds(lambda data, cut: data[:cut], st.sampled_from(HOSTILE), st.integers(0, 64)),
)


def bytes_arrays(shape: Tuple[int, ...]) -> Any:
    """An object array of ``shape`` holding random byte strings, or now and then the same
    data as a fixed-width ``np.bytes_`` array (which a client sends as BYTES too)."""
    size = int(np.prod(shape)) if shape else 1

    def build(items: List[bytes], fixed: bool) -> np.ndarray:
        array = np.empty(size, dtype=object)
        array[:] = items
        array = array.reshape(shape)
        if fixed and all(not item.endswith(b"\x00") for item in items):
            return array.astype(np.bytes_)
        return array

    return st.builds(build, st.lists(element_bytes, min_size=size, max_size=size), st.booleans())


# -- Tensor ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [*NUMERIC, "BYTES"])
@given(data=st.data())
@FUZZ
def test_tensor_decode_answers_every_request(dtype: str, data: Any) -> None:
    dims = data.draw(st.sampled_from(DIMS), label="dims")
    mbs = data.draw(st.sampled_from([0, 4]), label="max_batch_size")
    ragged = data.draw(st.sampled_from(["group", "pad"]), label="ragged")
    codec_args = {"ragged": ragged} if dtype != "BYTES" else {}
    harness = harness_for(
        ("tensor", dtype, dims, mbs, ragged),
        lambda: echo(tp.Tensor(dtype, dims, **codec_args), mbs),
    )
    shape = data.draw(shapes_near(dims, mbs > 0), label="shape")
    kind = data.draw(st.sampled_from(["numeric", "bytes"]), label="kind")
    array = data.draw(numeric_arrays(shape) if kind == "numeric" else bytes_arrays(shape))
    result = infer_one(harness, {"IN": array})
    assert_answered(result)
    if isinstance(result, dict):
        # what came back is what was sent: the decode path lost and invented nothing
        sent = array if array.dtype.kind != "S" else array.astype(object)
        assert result["OUT"].shape == sent.shape
        if sent.dtype.kind == "O":
            assert result["OUT"].tolist() == sent.tolist()
        else:
            np.testing.assert_array_equal(result["OUT"], sent)


@pytest.mark.parametrize("ragged", ["group", "pad"])
@given(data=st.data())
@FUZZ
def test_ragged_batches_of_random_shapes_answer_every_request(ragged: str, data: Any) -> None:
    dtype = data.draw(st.sampled_from(["INT32", "FP16", "BOOL", "UINT8", "BYTES"]), label="dt")
    dims = data.draw(st.sampled_from([(-1,), (-1, -1), (2, -1)]), label="dims")
    pad = b"" if dtype == "BYTES" else 0
    harness = harness_for(
        ("ragged", ragged, dtype, dims),
        lambda: echo(tp.Tensor(dtype, dims, ragged=ragged, pad_value=pad), 8),
    )
    arrays = bytes_arrays if dtype == "BYTES" else numeric_arrays
    count = data.draw(st.integers(1, 5), label="requests")
    requests = [{"IN": data.draw(arrays(data.draw(shapes_near(dims, True))))} for _ in range(count)]
    results = infer_many(harness, requests)
    assert len(results) == count
    for request, result in zip(requests, results):
        assert_answered(result)
        if isinstance(result, dict):
            sent = request["IN"]
            if sent.dtype.kind == "S":
                sent = sent.astype(object)
            if len(sent) == 0:
                # no row, no true length: the padded width of the batch stays
                assert result["OUT"].shape[:1] == (0,) and result["OUT"].ndim == sent.ndim
                continue
            assert result["OUT"].shape == sent.shape
            assert result["OUT"].tolist() == sent.tolist()


# -- element codecs -------------------------------------------------------------------------

ELEMENT_CODECS: Dict[str, Callable[[Tuple[int, ...]], tp.Codec]] = {
    "Text": lambda dims: tp.Text(dims),
    "Bytes": lambda dims: tp.Bytes(dims),
    "JSON": lambda dims: tp.JSON(dims),
    "Image": lambda dims: tp.Image("RGB", dims, max_pixels=10_000),
    "ImageGray": lambda dims: tp.Image("GRAY", dims, max_pixels=10_000),
}


@pytest.mark.parametrize("codec", sorted(ELEMENT_CODECS))
@given(data=st.data())
@FUZZ
def test_element_codec_decode_answers_every_request(codec: str, data: Any) -> None:
    if codec.startswith("Image"):
        pytest.importorskip("cv2", reason="tp.Image needs OpenCV (the image extra)")
    dims = data.draw(st.sampled_from([(1,), (2,), (-1,)]), label="dims")
    mbs = data.draw(st.sampled_from([0, 4]), label="max_batch_size")
    harness = harness_for(
        ("element", codec, dims, mbs), lambda: counting(ELEMENT_CODECS[codec](dims), mbs)
    )
    shape = data.draw(shapes_near(dims, mbs > 0), label="shape")
    kind = data.draw(st.sampled_from(["bytes", "bytes", "numeric"]), label="kind")
    array = data.draw(bytes_arrays(shape) if kind == "bytes" else numeric_arrays(shape))
    assert_answered(infer_one(harness, {"IN": array}))


@pytest.mark.parametrize("codec", ["Text", "Bytes", "JSON"])
@given(data=st.data())
@FUZZ
def test_element_values_that_decode_echo_back(codec: str, data: Any) -> None:
    """Echoed through the same codec, anything that decoded encodes again (JSON: NaN and
    huge floats included) and comes back to the client."""
    harness = harness_for(("echo", codec), lambda: echo(ELEMENT_CODECS[codec]((1,)), 4))
    array = data.draw(bytes_arrays((data.draw(st.integers(1, 3)), 1)))
    result = infer_one(harness, {"IN": array})
    assert_answered(result)
    if isinstance(result, dict) and codec != "JSON":
        assert result["OUT"].tolist() == array.astype(object).tolist()


# -- optional inputs ------------------------------------------------------------------------


class Optionals(tp.Model):
    inputs = {
        "X": tp.Tensor("FP32", [-1]),
        "SCALE": tp.Tensor("FP32", [1], default=1.0),
        "NOTE": tp.Text(optional=True),
        "META": tp.JSON(default={"k": 1}),
    }
    outputs = {"Y": tp.Tensor("FP32", [-1]), "SEEN": tp.JSON()}
    max_batch_size = 4

    def infer(self, X: Any, SCALE: Any, NOTE: Any, META: Any) -> Dict[str, Any]:
        seen = [{"note": NOTE is not None, "meta": m} for m in META]
        return {"Y": X * SCALE, "SEEN": seen}


@given(data=st.data())
@FUZZ
def test_optional_inputs_present_or_absent_answer_every_request(data: Any) -> None:
    harness = harness_for(("optionals",), lambda: Optionals)
    rows = data.draw(st.integers(0, 3), label="rows")
    inputs: Dict[str, Any] = {"X": data.draw(numeric_arrays((rows, 2)), label="X")}
    if data.draw(st.booleans(), label="SCALE"):
        inputs["SCALE"] = data.draw(numeric_arrays(data.draw(shapes_near((1,), True))))
    for name in ("NOTE", "META"):
        if data.draw(st.booleans(), label=name):
            inputs[name] = data.draw(bytes_arrays(data.draw(shapes_near((1,), True))))
    assert_answered(infer_one(harness, inputs))


# -- TorchTensor ----------------------------------------------------------------------------


@pytest.mark.torch
@given(data=st.data())
@FUZZ
def test_torch_tensor_decode_answers_every_request(data: Any) -> None:
    pytest.importorskip("torch", reason="TorchTensor needs PyTorch (the torch extra)")
    dtype = data.draw(st.sampled_from(["FP32", "INT64", "BOOL", "FP16", "UINT8"]), label="dt")
    dims = data.draw(st.sampled_from(DIMS), label="dims")
    mbs = data.draw(st.sampled_from([0, 4]), label="max_batch_size")
    harness = harness_for(
        ("torch", dtype, dims, mbs), lambda: echo(tp.TorchTensor(dtype, dims), mbs)
    )
    shape = data.draw(shapes_near(dims, mbs > 0), label="shape")
    array = data.draw(numeric_arrays(shape), label="array")
    result = infer_one(harness, {"IN": array})
    assert_answered(result)
    if isinstance(result, dict):
        np.testing.assert_array_equal(result["OUT"], array)


# -- every hostile element, through every element codec -------------------------------------


@pytest.mark.parametrize("codec", sorted(ELEMENT_CODECS))
@pytest.mark.parametrize("mbs", [0, 4])
def test_each_hostile_element_gets_its_own_answer(codec: str, mbs: int) -> None:
    """The random runs above draw a few of these; here every one goes through every codec,
    one request each, all in one execute() as the dynamic batcher sends them."""
    if codec.startswith("Image"):
        pytest.importorskip("cv2", reason="tp.Image needs OpenCV (the image extra)")
    harness = harness_for(
        ("element", codec, (1,), mbs), lambda: counting(ELEMENT_CODECS[codec]((1,)), mbs)
    )
    shape = (1, 1) if mbs else (1,)
    requests = [{"IN": np.array([item], dtype=object).reshape(shape)} for item in HOSTILE]
    results = infer_many(harness, requests) if mbs else [infer_one(harness, r) for r in requests]
    assert len(results) == len(HOSTILE)
    for item, result in zip(HOSTILE, results):
        assert_answered(result)
        if isinstance(result, tp.TritonRequestError):
            assert result.message.startswith("input 'IN', "), (item[:20], result.message)


@pytest.fixture(scope="module")
def encoded_images() -> Dict[str, bytes]:
    """A small image in every format OpenCV writes here (floats for PFM and HDR)."""
    cv2 = pytest.importorskip("cv2", reason="tp.Image needs OpenCV (the image extra)")
    pixels = np.random.default_rng(1).integers(0, 255, (20, 30, 3), dtype=np.uint8)
    encoded = {}
    for ext in [".png", ".jpg", ".bmp", ".ppm", ".pam", ".pfm", ".webp", ".tiff", ".sr", ".hdr"]:
        source = pixels.astype(np.float32) / 255 if ext in (".pfm", ".hdr") else pixels
        encoded[ext] = cv2.imencode(ext, source)[1].tobytes()
    return encoded


mutations = st.lists(
    st.tuples(
        st.sampled_from(["set", "cut", "insert"]),
        st.floats(0, 1),
        st.binary(min_size=1, max_size=8),
    ),
    min_size=1,
    max_size=8,
)


def mutate(data: bytes, steps: List[Tuple[str, float, bytes]]) -> bytes:
    """Bytes overwritten, the tail cut off, or bytes inserted, at relative positions."""
    out = bytearray(data)
    for kind, where, chunk in steps:
        if not out:
            break
        position = min(int(where * len(out)), len(out) - 1)
        if kind == "set":
            out[position : position + len(chunk)] = chunk
        elif kind == "cut":
            del out[position:]
        else:
            out[position:position] = chunk
    return bytes(out)


@given(data=st.data())
@FUZZ
def test_mutated_images_of_every_format_answer_every_request(
    encoded_images: Dict[str, bytes], data: Any
) -> None:
    """Real images with bytes flipped, cut or inserted: decoded, or refused as INVALID_ARG."""
    color = data.draw(st.sampled_from(["RGB", "GRAY"]), label="color")
    harness = harness_for(
        ("element", "Image" if color == "RGB" else "ImageGray", (1,), 4),
        lambda: counting(ELEMENT_CODECS["Image" if color == "RGB" else "ImageGray"]((1,)), 4),
    )
    ext = data.draw(st.sampled_from(sorted(encoded_images)), label="format")
    image = mutate(encoded_images[ext], data.draw(mutations, label="mutations"))
    result = infer_one(harness, {"IN": np.array([[image]], dtype=object)})
    assert_answered(result)
    if isinstance(result, dict):
        assert result["N"].tolist() == [[1]]


# -- image headers --------------------------------------------------------------------------

ENCODED_FORMATS = [".png", ".jpg", ".bmp", ".ppm", ".pgm", ".pbm", ".pam", ".pfm", ".webp"]
ENCODED_FORMATS += [".tiff", ".sr", ".hdr"]


@pytest.mark.parametrize("ext", ENCODED_FORMATS)
def test_image_header_size_is_read_before_decoding(ext: str) -> None:
    """Each format OpenCV writes here: the size read from the header is the real one, and an
    image over max_pixels is refused by it (a compressed image declaring gigapixels costs
    nothing)."""
    cv2 = pytest.importorskip("cv2", reason="tp.Image needs OpenCV (the image extra)")
    from tritonpy._runtime.codecs.image import image_size

    pixels = np.random.default_rng(0).integers(0, 255, (23, 37, 3), dtype=np.uint8)
    if ext in (".pfm", ".hdr"):
        source: np.ndarray = pixels.astype(np.float32) / 255
    elif ext in (".pgm", ".pbm"):
        source = pixels[:, :, 0]
    else:
        source = pixels
    ok, buffer = cv2.imencode(ext, source)
    assert ok
    data = buffer.tobytes()
    assert image_size(data) == (37, 23)
    harness = harness_for(("small-image",), lambda: counting(tp.Image(max_pixels=500), 4))
    with pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"IN": np.array([[data]], dtype=object)})
    assert caught.value.code == "INVALID_ARG"
    assert "image of 37x23 = 851 pixels exceeds the limit of 500 pixels" in caught.value.message


def test_opencv_assertion_on_a_hostile_header_is_invalid_arg() -> None:
    """With max_pixels above OpenCV's own limit, OpenCV raises cv2.error on a BMP declaring
    2**31 - 1 columns instead of returning None: the request's error, not the model's."""
    pytest.importorskip("cv2", reason="tp.Image needs OpenCV (the image extra)")
    harness = harness_for(("huge-limit",), lambda: counting(tp.Image(max_pixels=2**62), 4))
    with pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"IN": np.array([[_bmp(2**31 - 1, 1)]], dtype=object)})
    assert caught.value.code == "INVALID_ARG"
    assert caught.value.message.startswith("input 'IN', row 0: expected an encoded image")
    assert "OpenCV refused it" in caught.value.message


def test_json_nested_deeper_than_the_parser_allows_is_invalid_arg() -> None:
    harness = harness_for(("element", "JSON", (1,), 4), lambda: counting(tp.JSON(), 4))
    with pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"IN": np.array([[b"[" * 100_000]], dtype=object)})
    assert caught.value.code == "INVALID_ARG"
    assert "input 'IN', row 0: expected a UTF-8 JSON document" in caught.value.message
    assert "nested deeper than Python's JSON parser allows" in caught.value.message


def test_a_request_of_zero_rows_through_a_padded_bytes_input_answers() -> None:
    """Found by the ragged fuzz: a padded batch of zero rows made trim_padded and Padded.mask
    fail on reshape(0, -1), an INTERNAL error. (The 24.10 server refuses a [0, 1] BYTES
    request before the model, "expected 1 string elements ... got 0"; the harness lets it
    through, and a user's own Padded may have zero rows.)"""
    model = echo(tp.Tensor("BYTES", [-1], ragged="pad", pad_value=b""), 8)
    harness = harness_for(("zero-rows",), lambda: model)
    result = infer_one(harness, {"IN": np.empty((0, 1), dtype=object)})
    assert_answered(result)  # outputs of shape [0, 1], or refused as the server does
    if isinstance(result, dict):
        assert result["OUT"].shape == (0, 1)
    empty = tp.Padded(np.empty((0, 3), np.int64), np.empty(0, np.int64))
    assert empty.mask.shape == (0, 3)
    assert tp.trim_padded(empty).shape == (0, 3)
