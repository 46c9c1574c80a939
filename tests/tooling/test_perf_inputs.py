"""Input generation of ``tritonpy perf``: shapes, dtypes, kinds of BYTES data, user files and
the option parsers."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.perf._inputs import (
    DYNAMIC_DIM,
    InputSpec,
    PerfInputError,
    encode_png,
    generate_payloads,
    guess_kind,
    hints_from_class,
    parse_input_option,
    parse_shape_option,
    sample_image,
)

CONFIG = {
    "name": "m",
    "max_batch_size": 8,
    "input": [
        {"name": "IMAGE", "data_type": "TYPE_STRING", "dims": ["1"]},
        {"name": "SCORES", "data_type": "TYPE_FP32", "dims": [-1, 3]},
        {"name": "IDS", "data_type": "TYPE_INT64", "dims": [2]},
        {"name": "MASK", "data_type": "TYPE_BOOL", "dims": [2]},
        {"name": "EXTRA", "data_type": "TYPE_STRING", "dims": [1], "optional": True},
    ],
}


def test_shapes_dtypes_and_batch_dimension() -> None:
    payloads = generate_payloads(CONFIG, count=3)
    assert len(payloads) == 3
    first = payloads[0]
    assert set(first) == {"IMAGE", "SCORES", "IDS", "MASK"}  # the optional input is left out
    assert first["IMAGE"].shape == (1, 1) and first["IMAGE"].dtype == np.object_
    assert first["SCORES"].shape == (1, DYNAMIC_DIM, 3) and first["SCORES"].dtype == np.float32
    assert first["IDS"].dtype == np.int64 and first["IDS"].shape == (1, 2)
    assert first["MASK"].dtype == np.bool_
    assert not np.array_equal(payloads[0]["SCORES"], payloads[1]["SCORES"])  # random rows


def test_no_batch_dimension_when_the_model_does_not_batch() -> None:
    config = {"name": "m", "max_batch_size": 0, "input": [
        {"name": "X", "data_type": "TYPE_FP16", "dims": [4]}]}  # fmt: skip
    assert generate_payloads(config, count=1)[0]["X"].shape == (4,)


def test_image_inputs_get_a_decodable_png() -> None:
    element = generate_payloads(CONFIG, count=1)[0]["IMAGE"][0, 0]
    assert element.startswith(b"\x89PNG\r\n\x1a\n")
    cv2 = pytest.importorskip("cv2", reason="OpenCV decodes the PNG to check it")
    decoded = cv2.imdecode(np.frombuffer(element, np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape == (240, 320, 3)


def test_encode_png_round_trips_pixels() -> None:
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    data = encode_png(pixels)
    # IDAT holds filter byte 0 then the row's RGB bytes
    start = data.index(b"IDAT") + 4
    length = int.from_bytes(data[start - 8 : start - 4], "big")
    raw = zlib.decompress(data[start : start + length])
    assert raw == b"\x00" + pixels[0].tobytes() + b"\x00" + pixels[1].tobytes()
    with pytest.raises(PerfInputError, match=r"\(H, W, 3\) uint8"):
        encode_png(np.zeros((2, 2), np.uint8))


def test_sample_image_size() -> None:
    data = sample_image((64, 32))
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (64, 32)


def test_kinds_from_names_hints_and_options() -> None:
    assert guess_kind("input_image") == "image"
    assert guess_kind("PAYLOAD_JSON") == "json"
    assert guess_kind("TEXT") == "text"
    config = {"name": "m", "max_batch_size": 0, "input": [
        {"name": "DOC", "data_type": "TYPE_STRING", "dims": [1]}]}  # fmt: skip
    as_text = generate_payloads(config, count=1)[0]["DOC"][0]
    as_text.decode("utf-8")
    as_json = generate_payloads(config, count=1, hints={"DOC": "json"})[0]["DOC"][0]
    assert isinstance(json.loads(as_json), dict)
    small = generate_payloads(config, count=1, specs={"DOC": InputSpec("image", size=(8, 4))})
    assert small[0]["DOC"][0].startswith(b"\x89PNG")


def test_hints_from_tritonpy_declarations() -> None:
    class Mixed(tp.Model):
        inputs = {
            "PHOTO": tp.Image(),
            "QUERY": tp.Text(),
            "META": tp.JSON(),
            "X": tp.Tensor("FP32", [2]),
        }
        outputs = {"Y": tp.Tensor("FP32", [2])}

        def infer(self, PHOTO, QUERY, META, X):  # type: ignore[no-untyped-def]
            return {"Y": X}

    assert hints_from_class(Mixed) == {"PHOTO": "image", "QUERY": "text", "META": "json"}


def test_user_files(tmp_path: Path) -> None:
    blob = tmp_path / "cat.jpg"
    blob.write_bytes(b"\xff\xd8not really a jpeg")
    name, spec = parse_input_option(f"IMAGE={blob}")
    assert (name, spec.kind, spec.path) == ("IMAGE", "file", blob)
    ids = tmp_path / "ids.npy"
    np.save(ids, np.array([7, 8], np.int64))
    scores = tmp_path / "scores.json"
    scores.write_text("[[1, 2, 3]]")
    payload = generate_payloads(
        CONFIG,
        count=1,
        specs={"IMAGE": spec, "IDS": InputSpec("file", ids), "SCORES": InputSpec("file", scores)},
    )[0]
    assert payload["IMAGE"][0, 0] == blob.read_bytes()
    assert payload["IDS"].tolist() == [[7, 8]]  # batch dimension added
    assert payload["SCORES"].shape == (1, 1, 3) and payload["SCORES"].dtype == np.float32


def test_shape_override_and_unknown_names() -> None:
    payload = generate_payloads(CONFIG, count=1, shapes={"SCORES": (5, 3)})[0]
    assert payload["SCORES"].shape == (1, 5, 3)
    with pytest.raises(PerfInputError, match=r"no input\(s\) 'NOPE'.*IMAGE, SCORES"):
        generate_payloads(CONFIG, shapes={"NOPE": (1,)})


def test_option_parsers() -> None:
    assert parse_input_option("IMAGE=image:640x480") == (
        "IMAGE",
        InputSpec("image", size=(640, 480)),
    )
    assert parse_input_option("T=text") == ("T", InputSpec("text"))
    assert parse_shape_option("LOGITS=10") == ("LOGITS", (10,))
    with pytest.raises(PerfInputError, match="neither an existing file nor a kind"):
        parse_input_option("IMAGE=/no/such/file.jpg")
    with pytest.raises(PerfInputError, match="WIDTHxHEIGHT"):
        parse_input_option("IMAGE=image:axb")
    with pytest.raises(PerfInputError, match="NAME=FILE or NAME=KIND"):
        parse_input_option("IMAGE")
    with pytest.raises(PerfInputError, match="positive dims"):
        parse_shape_option("LOGITS=0")


def test_cli_refuses_bad_options_before_contacting_a_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tritonpy.cli import main

    # no server listens on port 9: the option errors must come first
    assert main(["perf", "m", "--url", "localhost:9", "--input", "IMAGE"]) == 2
    assert (
        "tritonpy perf: --input 'IMAGE': expected NAME=FILE or NAME=KIND" in capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["perf", "m", "--concurrency", "0,4"])
    assert exit_info.value.code == 2
    assert "expected comma-separated positive integers" in capsys.readouterr().err
