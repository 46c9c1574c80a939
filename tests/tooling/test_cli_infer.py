"""``tritonpy infer`` without a server: how outputs are shown and how VALUEs become tensors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tritonpy._tooling.tensor_display import SUMMARY_THRESHOLD, format_tensor, tensor_to_json
from tritonpy.server._client import OutputTensor, TensorSpec, format_output, parse_input_value


def test_small_outputs_print_on_one_line_with_exact_short_floats() -> None:
    out = OutputTensor("OUTPUT0", "FP32", np.array([2, 3, 4, 0.1], np.float32))
    assert format_output(out) == "OUTPUT0 (FP32, shape [4]): [2.0, 3.0, 4.0, 0.1]"
    ints = OutputTensor("LENGTH", "INT64", np.array([[13]], np.int64))
    assert format_output(ints) == "LENGTH (INT64, shape [1, 1]): [[13]]"


def test_a_large_output_is_summarised_by_numpy() -> None:
    pixels = np.arange(3 * 224 * 224, dtype=np.float32).reshape(1, 3, 224, 224) / 7
    text = format_tensor("PIXELS", "FP32", pixels)
    lines = text.splitlines()
    assert lines[0] == "PIXELS (FP32, shape [1, 3, 224, 224]):"
    assert len(lines) < 30 and len(text) < 3000  # not 150 528 numbers
    assert "..." in text
    assert lines[1].startswith("  [[[[0.0, 0.142857, 0.285714, ...,")  # 6 digits in a summary
    assert all(line == line.rstrip() for line in lines)


def test_full_prints_every_element_with_full_precision() -> None:
    values = np.arange(SUMMARY_THRESHOLD * 2, dtype=np.float32) / 7
    text = format_tensor("X", "FP32", values, full=True)
    assert "..." not in text
    assert "0.14285715" in text  # the shortest exact FP32 text
    assert text.split(":", 1)[1].count(",") == values.size - 1


def test_bytes_are_shown_as_text_when_utf8_and_cut_when_long() -> None:
    rows = np.array([["héllo".encode()], [b"\x89PNG\r\n\x1a\n" + bytes(300)]], dtype=object)
    text = format_tensor("DOC", "BYTES", rows)
    assert "'héllo'" in text
    assert "b'\\x89PNG" in text and "...(308 bytes)" in text
    long_text = np.array([["x" * 500]], dtype=object)
    long_text[0, 0] = long_text[0, 0].encode()
    assert "...(500 chars)" in format_tensor("T", "BYTES", long_text)
    assert "x" * 500 in format_tensor("T", "BYTES", long_text, full=True)


def test_json_form_keeps_every_element_and_marks_binary() -> None:
    rows = np.array([[b'{"a": 1}'], [b"\xff\x00"]], dtype=object)
    doc = tensor_to_json("DOC", "BYTES", rows)
    assert doc == {
        "name": "DOC",
        "datatype": "BYTES",
        "shape": [2, 1],
        "data": [['{"a": 1}'], [{"base64": "/wA="}]],
    }
    big = np.zeros((2, 500), np.float32)
    assert json.loads(json.dumps(tensor_to_json("Z", "FP32", big)))["data"] == big.tolist()


@pytest.mark.parametrize("value", ['{"a": 1}', "[1, 2]", '"quoted"', "42", "plain text"])
def test_a_bytes_input_gets_the_value_text_as_one_row(value: str) -> None:
    spec = TensorSpec("DOC", "BYTES", (1,))
    array = parse_input_value(value, spec, max_batch_size=8)
    assert array.shape == (1, 1) and array.dtype == np.object_
    assert array[0, 0] == value.encode("utf-8")
    assert parse_input_value(value, spec, max_batch_size=0).shape == (1,)


def test_a_numeric_input_takes_a_json_list() -> None:
    spec = TensorSpec("X", "FP32", (4,))
    array = parse_input_value("[1, 2, 3, 4]", spec, max_batch_size=8)
    assert array.dtype == np.float32 and array.tolist() == [[1, 2, 3, 4]]


def test_cli_help_documents_the_value_rule(capsys: pytest.CaptureFixture[str]) -> None:
    from tritonpy.cli import main

    with pytest.raises(SystemExit):
        main(["infer", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "a BYTES input (tp.Text, tp.JSON, tp.Bytes, tp.Image) gets one row" in help_text
    assert "sends that JSON document to a tp.JSON input" in help_text
    assert "--full" in help_text and "--json" in help_text
    assert "default localhost:8001" in help_text
