"""Every codec through a model in the harness: round trips and tricky values."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness

try:
    import cv2
except ImportError:  # the image extra is optional: only the image tests need it
    cv2 = None

needs_cv2 = pytest.mark.skipif(
    cv2 is None, reason="tp.Image needs OpenCV: pip install 'tritonpy[image]' to run this test"
)


def echo_model(codec: tp.Codec, out: tp.Codec | None = None, max_batch_size: int = 8) -> type:
    class Echo(tp.Model):
        inputs = {"IN": codec}
        outputs = {"OUT": out or codec}

        def setup(self) -> None:
            self.seen: List[Any] = []

        def infer(self, IN: Any) -> Dict[str, Any]:
            self.seen.append(IN)
            return {"OUT": IN}

    Echo.max_batch_size = max_batch_size  # type: ignore[misc]
    return Echo


def with_infer(model: type, infer: Callable[..., Any]) -> type:
    """``model`` with another ``infer`` (a keyword function of its inputs)."""

    def replaced(self: Any, IN: Any) -> Any:
        return infer(IN=IN)

    return type(model.__name__, (model,), {"infer": replaced})


def column(*values: bytes) -> np.ndarray:
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = list(values)
    return array


# -- Tensor ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("BOOL", np.array([[True, False, True]])),
        ("UINT8", np.array([[0, 128, 255]], np.uint8)),
        ("INT8", np.array([[-128, 0, 127]], np.int8)),
        ("INT64", np.array([[-(2**62), 0, 2**62]], np.int64)),
        ("FP16", np.array([[0.5, -65504.0, np.inf]], np.float16)),
        ("FP32", np.array([[np.nan, 1e-30, -0.0]], np.float32)),
        ("FP64", np.array([[1e300, -1e-300, 3.0]], np.float64)),
    ],
)
def test_tensor_round_trip_keeps_dtype_and_values(dtype: str, values: np.ndarray) -> None:
    with ModelHarness(echo_model(tp.Tensor(dtype, [3]))) as harness:
        out = harness.infer({"IN": values})["OUT"]
    assert out.dtype == values.dtype
    np.testing.assert_array_equal(out, values)


def test_tensor_input_is_the_array_the_request_carried() -> None:
    values = np.arange(6, dtype=np.int32).reshape(2, 3)
    with ModelHarness(echo_model(tp.Tensor("INT32", [3]))) as harness:
        harness.infer({"IN": values})
        (seen,) = harness.model.seen
    assert isinstance(seen, np.ndarray)
    assert seen.shape == (2, 3) and seen.dtype == np.int32


def test_bytes_tensor_keeps_raw_object_arrays() -> None:
    values = column(b"", b"a\x00b", b"tail\x00\x00")
    with ModelHarness(echo_model(tp.Tensor("BYTES", [1]))) as harness:
        out = harness.infer({"IN": values})["OUT"]
    assert out.dtype == object
    assert out.ravel().tolist() == [b"", b"a\x00b", b"tail\x00\x00"]


def test_tensor_wrong_dtype_is_invalid_arg() -> None:
    with ModelHarness(echo_model(tp.Tensor("FP32", [3]))) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"IN": np.zeros((1, 3), np.float64)})
    assert caught.value.code == "INVALID_ARG"


def test_tensor_decode_checks_dtype_and_shape_itself() -> None:
    from tritonpy.testing import fake_pb_utils as pb

    codec = tp.Tensor("FP32", [3])
    with pytest.raises(tp.InputError) as caught:
        codec.decode("IN", pb.Tensor("IN", np.zeros((2, 4), np.float64)), batched=True)
    assert str(caught.value) == (
        "input 'IN': expected FP32 with shape [rows, 3], got FP64 (float64) with shape [2, 4]"
    )
    assert caught.value.input_name == "IN"


def test_output_declared_1_accepts_one_value_per_row() -> None:
    class Score(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [4])}
        outputs = {"S": tp.Tensor("FP32", [1])}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"S": X.sum(axis=1)}  # shape [rows], declared [1]

    with ModelHarness(Score) as harness:
        out = harness.infer({"X": np.ones((2, 4), np.float32)})
    assert out["S"].shape == (2, 1)


# -- Text / Bytes ---------------------------------------------------------------------------


TRICKY_TEXT = ["", "plain", "naïve — ünïcødé ✓", "embedded\x00nul", "trailing nul\x00", "🙂"]


def test_text_round_trip_with_tricky_values() -> None:
    encoded = column(*(t.encode("utf-8") for t in TRICKY_TEXT))
    with ModelHarness(echo_model(tp.Text())) as harness:
        out = harness.infer({"IN": encoded})["OUT"]
        (seen,) = harness.model.seen
    assert seen == TRICKY_TEXT
    assert out.dtype == object and out.shape == (len(TRICKY_TEXT), 1)
    assert [b.decode("utf-8") for b in out.ravel()] == TRICKY_TEXT


def test_text_without_batching_is_a_plain_str() -> None:
    with ModelHarness(echo_model(tp.Text(), max_batch_size=0)) as harness:
        out = harness.infer({"IN": "hello"})["OUT"]
        assert harness.model.seen == ["hello"]
    assert out.tolist() == [b"hello"]


def test_text_with_variable_dims_gives_a_list_per_row() -> None:
    with ModelHarness(echo_model(tp.Text(dims=[-1]))) as harness:
        out = harness.infer({"IN": np.array([[b"a", b"b"], [b"c", b""]], dtype=object)})["OUT"]
        assert harness.model.seen == [[["a", "b"], ["c", ""]]]
    assert out.tolist() == [[b"a", b"b"], [b"c", b""]]


def test_non_utf8_text_names_the_row_and_suggests_bytes() -> None:
    with ModelHarness(echo_model(tp.Text())) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"IN": column(b"ok", b"\xc3\x28")})
    assert caught.value.code == "INVALID_ARG"
    assert caught.value.message.startswith(
        "input 'IN', row 1: expected UTF-8 text, got 2 bytes b'\\xc3('"
    )


def test_bytes_keep_everything_including_non_utf8_and_trailing_nuls() -> None:
    raw = [b"", b"\xff\xfe\x00", b"x\x00\x00", bytes(range(256))]
    with ModelHarness(echo_model(tp.Bytes())) as harness:
        out = harness.infer({"IN": column(*raw)})["OUT"]
        assert harness.model.seen == [raw]
    assert out.ravel().tolist() == raw


def test_text_arrays_of_str_and_bytes_go_to_the_tensor_as_they_are() -> None:
    from tritonpy.testing import fake_pb_utils as pb

    labels = np.array([["cat", b"dog", "\u00e9t\u00e9"]], dtype=object)
    for codec in (tp.Text(dims=[3]), tp.Bytes(dims=[3])):
        assert codec.encode("L", labels, batched=True) is labels  # no second encoding
        # what the client gets: the stub encodes str as UTF-8 when the tensor is built
        tensor = codec.to_tensor("L", labels, pb)
        assert pb.serialize_byte_tensor(tensor.as_numpy()) == pb.serialize_byte_tensor(
            np.array([[b"cat", b"dog", "\u00e9t\u00e9".encode()]], dtype=object)
        )
    # anything else is encoded by the codec: other element types, other shapes
    mixed = np.array([["cat", 7, "x"]], dtype=object)
    with pytest.raises(tp.OutputError, match="element 1: cannot encode int"):
        tp.Text(dims=[3]).encode("L", mixed, batched=True)
    column_of_rows = np.array(["a", "b"], dtype=object)
    encoded = tp.Text().encode("L", column_of_rows, batched=True)
    assert encoded.shape == (2, 1) and encoded.ravel().tolist() == [b"a", b"b"]


def test_a_text_subclass_with_its_own_encoding_encodes_arrays_too() -> None:
    class Shouting(tp.Text):
        def encode_element(self, value: Any) -> bytes:
            return str(value).upper().encode()

    labels = np.array([["cat", "dog"]], dtype=object)
    encoded = Shouting(dims=[2]).encode("L", labels, batched=True)
    assert encoded.tolist() == [[b"CAT", b"DOG"]]


def test_text_with_a_lone_surrogate_names_the_output_and_element() -> None:
    from tritonpy.testing import fake_pb_utils as pb

    # Text(errors="surrogateescape") turns invalid UTF-8 into such a str
    labels = np.array([["fine", "bad \udcff"]], dtype=object)
    codec = tp.Text(dims=[2])
    with pytest.raises(UnicodeEncodeError):
        pb.Tensor("L", labels)  # as the real Tensor does when it is built
    part = codec.encode("L", labels, batched=True)
    with pytest.raises(tp.OutputError) as caught:
        codec.to_tensor("L", part, pb)
    assert str(caught.value).startswith(
        "output 'L', element 1: cannot encode str as UTF-8 text: 'utf-8' codec can't encode"
    )


def test_text_output_refuses_non_strings_with_the_position() -> None:
    class Bad(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"T": tp.Text()}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"T": ["fine", 42]}

    with ModelHarness(Bad) as harness, pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"X": np.zeros((2, 1), np.int32)})
    assert caught.value.code == "INTERNAL"
    assert "output 'T', element 1: cannot encode int as UTF-8 text" in caught.value.message


def test_text_rows_returned_as_a_list_go_to_the_stub_as_they_are() -> None:
    from tritonpy.testing import fake_pb_utils as pb

    rows = ["cat", b"dog", "\u00e9t\u00e9"]
    encoded = tp.Text().encode("L", rows, batched=True)
    assert encoded.shape == (3, 1) and all(encoded[i, 0] is rows[i] for i in range(3))
    # what the client gets: the stub encodes str as UTF-8 when the tensor is built
    tensor = tp.Text().to_tensor("L", encoded, pb)
    assert pb.serialize_byte_tensor(tensor.as_numpy()) == pb.serialize_byte_tensor(
        np.array([[b"cat"], [b"dog"], ["\u00e9t\u00e9".encode()]], dtype=object)
    )


def test_a_text_row_the_stub_cannot_encode_is_named() -> None:
    class Surrogate(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"T": tp.Text()}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"T": ["fine", "bad \udcff"]}

    with ModelHarness(Surrogate) as harness, pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"X": np.zeros((2, 1), np.int32)})
    assert caught.value.code == "INTERNAL"
    assert "output 'T', element 1: cannot encode str as UTF-8 text" in caught.value.message


def test_text_and_bytes_subclasses_decode_each_element_their_way() -> None:
    class Lower(tp.Text):
        def decode_element(self, data: bytes) -> str:
            return data.decode().lower()

    class Reversed(tp.Bytes):
        def decode_element(self, data: bytes) -> bytes:
            if not data:
                raise ValueError("empty")
            return data[::-1]

    with ModelHarness(echo_model(Lower())) as harness:
        harness.infer({"IN": column(b"AbC", b"X")})
        assert harness.model.seen == [["abc", "x"]]
    with ModelHarness(echo_model(Reversed())) as harness:
        harness.infer({"IN": column(b"ab", b"xyz")})
        assert harness.model.seen == [[b"ba", b"zyx"]]
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"IN": column(b"ab", b"")})
    assert caught.value.message.startswith("input 'IN', row 1: expected bytes, got 0 bytes")


# -- JSON -----------------------------------------------------------------------------------


def test_json_round_trip() -> None:
    documents = [{"a": [1, 2.5, None]}, [], "text", 7, {"ünï": True}]
    encoded = column(*(json.dumps(d).encode() for d in documents))
    with ModelHarness(echo_model(tp.JSON())) as harness:
        out = harness.infer({"IN": encoded})["OUT"]
        assert harness.model.seen == [documents]
    assert [json.loads(b) for b in out.ravel()] == documents


def test_json_output_converts_numpy_values() -> None:
    class Stats(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [3])}
        outputs = {"STATS": tp.JSON()}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"STATS": [{"max": row.max(), "row": row} for row in X]}

    with ModelHarness(Stats) as harness:
        out = harness.infer({"X": np.array([[1, 5, 2]], np.float32)})["STATS"]
    assert json.loads(out[0, 0]) == {"max": 5.0, "row": [1.0, 5.0, 2.0]}


def test_json_output_that_cannot_be_encoded_names_the_element() -> None:
    looped: List[Any] = []
    looped.append(looped)

    class Stats(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"STATS": tp.JSON()}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            bad = {1, 2} if X[0, 0] == 0 else looped
            return {"STATS": [{"ok": True}, {"bad": bad}]}

    with ModelHarness(Stats) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"X": np.zeros((2, 1), np.int32)})
        assert caught.value.code == "INTERNAL"
        assert (
            "output 'STATS', element 1: cannot encode dict as a UTF-8 JSON document: Object "
            "of type set is not JSON serializable" in caught.value.message
        )
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"X": np.ones((2, 1), np.int32)})
        assert "output 'STATS', element 1: cannot encode dict" in caught.value.message


def test_invalid_json_is_invalid_arg() -> None:
    with ModelHarness(echo_model(tp.JSON())) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"IN": column(b"{not json")})
    assert caught.value.code == "INVALID_ARG"
    assert "input 'IN', row 0: expected a UTF-8 JSON document" in caught.value.message


# -- Image ----------------------------------------------------------------------------------


@needs_cv2
def test_image_png_round_trip_in_each_color_order() -> None:
    image_bgr = np.zeros((5, 7, 3), np.uint8)
    image_bgr[..., 0] = 10  # blue
    image_bgr[..., 2] = 200  # red
    png = cv2.imencode(".png", image_bgr)[1].tobytes()
    for color, first_channel in (("RGB", 200), ("BGR", 10)):
        with ModelHarness(echo_model(tp.Image(color=color))) as harness:
            out = harness.infer({"IN": column(png)})["OUT"]
            (seen,) = harness.model.seen
        assert seen[0].shape == (5, 7, 3) and seen[0].dtype == np.uint8
        assert int(seen[0][0, 0, 0]) == first_channel
        decoded = cv2.imdecode(np.frombuffer(out[0, 0], np.uint8), cv2.IMREAD_COLOR)
        np.testing.assert_array_equal(decoded, image_bgr)


@needs_cv2
def test_gray_image_has_one_channel() -> None:
    png = cv2.imencode(".png", np.full((4, 3), 77, np.uint8))[1].tobytes()
    with ModelHarness(echo_model(tp.Image(color="GRAY"))) as harness:
        harness.infer({"IN": column(png)})
        (seen,) = harness.model.seen
    assert seen[0].shape == (4, 3, 1)
    assert int(seen[0][2, 1, 0]) == 77


@needs_cv2
def test_jpeg_decodes() -> None:
    jpg = cv2.imencode(".jpg", np.full((16, 16, 3), 128, np.uint8))[1].tobytes()
    model = with_infer(
        echo_model(tp.Image(), out=tp.Tensor("BYTES", [1])),
        lambda IN: {"OUT": [[im.shape[0]] for im in IN]},
    )
    with ModelHarness(model) as harness:
        out = harness.infer({"IN": column(jpg)})["OUT"]
    assert out.tolist() == [[b"16"]]


@needs_cv2
def test_image_over_the_pixel_limit_is_refused_before_decoding() -> None:
    png = cv2.imencode(".png", np.zeros((100, 100, 3), np.uint8))[1].tobytes()
    jpg = cv2.imencode(".jpg", np.zeros((100, 100, 3), np.uint8))[1].tobytes()
    for data in (png, jpg):
        with ModelHarness(echo_model(tp.Image(max_pixels=5000))) as harness:
            with pytest.raises(tp.TritonRequestError) as caught:
                harness.infer({"IN": column(data)})
        assert caught.value.code == "INVALID_ARG"
        assert "image of 100x100 = 10000 pixels exceeds the limit of 5000 pixels" in (
            caught.value.message
        )


@needs_cv2
@pytest.mark.parametrize("data", [b"", b"not an image", b"\x89PNG\r\n\x1a\n broken"])
def test_undecodable_image_is_invalid_arg(data: bytes) -> None:
    with ModelHarness(echo_model(tp.Image())) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"IN": column(data)})
    assert caught.value.code == "INVALID_ARG"
    assert caught.value.message.startswith("input 'IN', row 0: expected an encoded image")


def photo_jpeg(width: int, height: int, seed: int = 0, quality: int = 90) -> bytes:
    """A photo-like JPEG: gradients, a few discs, noise (the worst case for resizing)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([128 + 100 * np.sin(x / 37), 128 + 100 * np.cos(y / 23), x * 0 + 90], -1)
    for _ in range(8):
        centre = (int(rng.integers(0, width)), int(rng.integers(0, height)))
        colour = [float(c) for c in rng.integers(0, 256, 3)]
        cv2.circle(image, centre, int(rng.integers(10, 80)), colour, -1)
    image += rng.normal(0, 12, image.shape)
    pixels = np.clip(image, 0, 255).astype(np.uint8)
    return bytes(cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, quality])[1])


def exact_resize(data: bytes, size: Any, color: int = 0) -> np.ndarray:
    """The hand-written reference: full-size decode, then INTER_LINEAR resize, then RGB."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return cv2.cvtColor(cv2.resize(image, size, interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)


@needs_cv2
@pytest.mark.parametrize("batched", [True, False])
def test_image_size_decodes_straight_to_that_size(batched: bool) -> None:
    png = cv2.imencode(".png", np.arange(48 * 64 * 3, dtype=np.uint8).reshape(48, 64, 3))[1]
    data = png.tobytes()
    codec, out = tp.Image(size=(32, 24)), tp.Image()
    with ModelHarness(echo_model(codec, out, max_batch_size=8 if batched else 0)) as harness:
        harness.infer({"IN": column(data) if batched else np.array([data], dtype=object)})
        (seen,) = harness.model.seen
    image = seen[0] if batched else seen
    # PNG has no reduced decoding: the exact path, bit for bit
    np.testing.assert_array_equal(image, exact_resize(data, (32, 24)))


@needs_cv2
def test_reduced_jpeg_decoding_stays_within_the_stated_tolerance() -> None:
    # docs/codecs.md: mean absolute difference under 6 of 255 levels, 99 % of the pixels
    # within 25 levels, against the exact path (full decode + INTER_LINEAR)
    for width, height, size in (
        (640, 480, (224, 224)),
        (1280, 960, (224, 224)),
        (640, 480, (96, 64)),
    ):
        for seed in range(2):
            data = photo_jpeg(width, height, seed)
            fast = tp.Image(size=size).decode_element(data)
            exact = tp.Image(size=size, reduced_decode=False).decode_element(data)
            np.testing.assert_array_equal(exact, exact_resize(data, size))
            difference = np.abs(fast.astype(np.int16) - exact.astype(np.int16))
            assert fast.shape == (size[1], size[0], 3)
            assert 0 < difference.mean() < 6 and np.percentile(difference, 99) <= 25


@needs_cv2
def test_reduced_decoding_only_where_the_target_is_at_most_half() -> None:
    data = photo_jpeg(640, 480)
    # 300 > 480 / 2: no reduced decoding, so the fast path is the exact one
    near = tp.Image(size=(300, 300)).decode_element(data)
    np.testing.assert_array_equal(near, exact_resize(data, (300, 300)))
    from tritonpy._runtime.codecs._image_decode import reduced_factor

    assert reduced_factor((640, 480), (224, 224)) == 2
    assert reduced_factor((4000, 3000), (224, 224)) == 8
    assert reduced_factor((1920, 1080), (224, 224)) == 4
    assert reduced_factor((480, 640), (240, 100)) == 2  # either orientation (EXIF)
    assert reduced_factor((100, 100), (224, 224)) == 1


class ThreadNoting(tp.Image):
    """An Image that notes the threads it decoded on."""

    def decode_element(self, data: bytes) -> Any:
        import threading

        self.threads_seen.add(threading.current_thread().name)
        return super().decode_element(data)


@needs_cv2
@pytest.mark.parametrize("threads", [None, 1, 3])
def test_merged_images_decode_on_threads_in_request_order(
    threads: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tritonpy._runtime.codecs import _image_decode

    monkeypatch.setattr(_image_decode, "PARALLEL_MIN_BYTES", 0)  # small test images
    images = [photo_jpeg(160 + 16 * i, 120, seed=i) for i in range(6)]
    codec = ThreadNoting(color="BGR", size=(40, 30), threads=threads)
    codec.threads_seen = set()  # type: ignore[attr-defined]
    model = with_infer(
        echo_model(codec, out=tp.Tensor("UINT8", [30, 40, 3])), lambda IN: {"OUT": np.stack(IN)}
    )
    with ModelHarness(model) as harness:
        results = harness.infer_requests(
            [{"IN": column(*images[:2])}, {"IN": column(images[2])}, {"IN": column(*images[3:])}]
        )
    rows = np.concatenate([r["OUT"] for r in results])  # type: ignore[index]
    expected = [tp.Image(color="BGR", size=(40, 30)).decode_element(d) for d in images]
    np.testing.assert_array_equal(rows, np.stack(expected))
    pooled = {name for name in codec.threads_seen if name.startswith("tritonpy-image")}  # type: ignore[attr-defined]
    assert bool(pooled) == (threads == 3 or (threads is None and _image_decode.usable_cores() > 1))


@needs_cv2
def test_small_images_decode_on_the_calling_thread() -> None:
    # tiny PNGs (digits) cost less to decode than to hand to a thread
    png = cv2.imencode(".png", np.full((8, 8), 3, np.uint8))[1].tobytes()
    codec = ThreadNoting(color="GRAY", size=(8, 8), threads=4)
    codec.threads_seen = set()  # type: ignore[attr-defined]
    with ModelHarness(echo_model(codec, out=tp.Image(color="GRAY"))) as harness:
        harness.infer_requests([{"IN": column(png, png)}, {"IN": column(png)}])
    assert not any(name.startswith("tritonpy-image") for name in codec.threads_seen)  # type: ignore[attr-defined]


@needs_cv2
def test_a_bad_image_in_a_merged_batch_fails_its_request_alone() -> None:
    good = photo_jpeg(64, 48)
    truncated = good[:200]  # a JPEG header and too little data: only decoding finds out
    model = with_infer(
        echo_model(tp.Image(size=(16, 16)), out=tp.Tensor("INT64", [1])),
        lambda IN: {"OUT": np.array([[im.shape[0]] for im in IN])},
    )
    with ModelHarness(model) as harness:
        results = harness.infer_requests(
            [{"IN": column(good)}, {"IN": column(good, truncated)}, {"IN": column(b"")}]
        )
    assert results[0]["OUT"].tolist() == [[16]]  # type: ignore[index]
    for result, message in (
        (results[1], "input 'IN', row 1: expected an encoded image"),
        (results[2], "input 'IN', row 0: expected an encoded image (PNG, JPEG, ...), got 0 bytes"),
    ):
        assert isinstance(result, tp.TritonRequestError) and result.code == "INVALID_ARG"
        assert result.message.startswith(message), result.message


def test_image_size_and_threads_are_checked() -> None:
    for bad in ((224,), (0, 10), ("a", 3), (2.5, 3)):
        with pytest.raises(tp.DeclarationError, match="expected \\(width, height\\)"):
            tp.Image(size=bad)  # type: ignore[arg-type]
    with pytest.raises(tp.DeclarationError, match="positive number of threads"):
        tp.Image(threads=0)
    with pytest.raises(tp.DeclarationError, match="resizes decoded inputs"):

        class Out(tp.Model):
            inputs = {"X": tp.Tensor("UINT8", [2, 2, 3])}
            outputs = {"Y": tp.Image(size=(2, 2))}


@needs_cv2
def test_image_output_encodes_jpeg_with_quality() -> None:
    class Thumb(tp.Model):
        inputs = {"X": tp.Tensor("UINT8", [8, 8, 3])}
        outputs = {"JPEG": tp.Image(format="jpg", quality=95)}
        max_batch_size = 2

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"JPEG": list(X)}

    pixels = np.full((1, 8, 8, 3), 90, np.uint8)
    with ModelHarness(Thumb) as harness:
        data = harness.infer({"X": pixels})["JPEG"][0, 0]
    assert data[:2] == b"\xff\xd8"
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert abs(int(decoded.mean()) - 90) <= 2


def test_codec_with_default_is_optional() -> None:
    codec = tp.Text(default="x")
    assert codec.optional is True
    assert codec.config_entry("T", is_input=True)["optional"] is True


@pytest.mark.parametrize("codec", [tp.Text, tp.JSON, tp.Bytes, tp.Image])
def test_a_misspelt_codec_option_fails_at_class_definition(codec: Any) -> None:
    with pytest.raises(TypeError, match="optinal"):

        class Misspelt(tp.Model):
            inputs = {"X": codec(optinal=True)}
            outputs = {"Y": tp.Text()}

    assert codec(dims=[2], optional=True).config_entry("X", is_input=True) == {
        "name": "X",
        "data_type": "TYPE_STRING",
        "dims": [2],
        "optional": True,
    }


def test_json_keeps_the_short_form_of_float32_values() -> None:
    encoded = tp.JSON().encode_element(
        {"score": np.float32(0.9), "row": np.array([0.1, 0.2], np.float32), "n": np.int64(3)}
    )
    assert encoded == b'{"score":0.9,"row":[0.1,0.2],"n":3}'


@needs_cv2
def test_element_outputs_accept_arrays() -> None:
    class Arrays(tp.Model):
        inputs = {"X": tp.Tensor("UINT8", [4, 4, 3])}
        outputs = {"PNG": tp.Image(), "NAME": tp.Text(), "ONE": tp.JSON()}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            names = np.array([[f"img{i}"] for i in range(len(X))], dtype=object)  # [rows, 1]
            return {"PNG": X, "NAME": names, "ONE": np.ones((len(X), 1), np.float32)}

    pixels = np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)
    with ModelHarness(Arrays) as harness:
        out = harness.infer({"X": pixels})
    assert out["NAME"].tolist() == [[b"img0"], [b"img1"]]
    assert out["ONE"].tolist() == [[b"1.0"], [b"1.0"]]
    decoded = cv2.imdecode(np.frombuffer(out["PNG"][1, 0], np.uint8), cv2.IMREAD_COLOR)
    np.testing.assert_array_equal(cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB), pixels[1])


def test_json_with_a_lone_surrogate_is_invalid_input_not_an_internal_error() -> None:
    """Found by the fuzz on Python 3.9: '"\\ud800"' is valid JSON but not Unicode text."""
    codec = tp.JSON()
    with pytest.raises(ValueError, match="lone UTF-16 surrogate"):
        codec.decode_element(b'{"k": ["\\ud800"]}')
    assert codec.decode_element(b'"\\ud83d\\ude00"') == "\U0001f600"  # a valid pair
