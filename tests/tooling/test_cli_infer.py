"""``tritonpy infer`` without a server: how outputs are shown and how VALUEs become tensors, a
stream's responses and a sequence's options (the real server:
tests/integration/test_infer_kinds.py)."""

from __future__ import annotations

import json
from typing import Any, Iterator, List

import numpy as np
import pytest

from tritonpy._tooling.tensor_display import SUMMARY_THRESHOLD, format_tensor, tensor_to_json
from tritonpy.client import OutputTensor, TensorSpec, format_output, parse_input_value


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


# ------------------------------------------------------------ decoupled and sequence models
def test_sequence_options_on_each_kind() -> None:
    from tritonpy._tooling.errors import ServerError
    from tritonpy.client import ModelKind, SequenceOptions, sequence_control

    seq = ModelKind(sequence=True, sequence_model="s", id_type="TYPE_UINT64")
    fresh = sequence_control("s", seq, SequenceOptions())
    assert fresh is not None and (fresh.start, fresh.end) == (True, True)
    assert isinstance(fresh.id, int) and fresh.id > 0
    driven = sequence_control("s", seq, SequenceOptions("user-7", start=True))
    assert driven is not None and (driven.id, driven.start, driven.end) == ("user-7", True, False)
    with pytest.raises(ServerError, match="--sequence-start and --sequence-end need --sequence-id"):
        sequence_control("s", seq, SequenceOptions(end=True))
    with pytest.raises(ServerError, match="needs a non-zero number or a non-empty string"):
        sequence_control("s", seq, SequenceOptions(0))
    assert sequence_control("p", ModelKind(), SequenceOptions()) is None
    with pytest.raises(ServerError, match="model 'p' is no sequence model"):
        sequence_control("p", ModelKind(), SequenceOptions(3))


def test_a_sequence_id_is_a_number_when_it_reads_as_one() -> None:
    from tritonpy.client import sequence_id_from_text

    assert sequence_id_from_text("42") == 42
    assert sequence_id_from_text("user-7") == "user-7"
    assert sequence_id_from_text("-3") == "-3"  # no negative ids: a string


def stream_events(final: bool = True) -> List[Any]:
    from tritonpy.client import InferEnd, InferResponse

    out = [OutputTensor("OUT", "INT32", np.array([4], np.int32))]
    return [
        InferResponse(0, out, True),
        InferResponse(1, out, True),
        InferEnd(2, True, final, None),
    ]


def test_a_stream_prints_each_response_then_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    from tritonpy.server._infer_cli import print_infer_events

    assert print_infer_events(stream_events(), as_json=False, model="square") == 0
    assert capsys.readouterr().out.splitlines() == [
        "response 0",
        "OUT (INT32, shape [1]): [4]",
        "response 1",
        "OUT (INT32, shape [1]): [4]",
        "2 response(s), the stream ended with the final flag",
    ]
    print_infer_events(stream_events(final=False), as_json=True, model="square")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.get("index") for line in lines] == [0, 1, None]
    assert lines[2] == {"model": "square", "responses": 2, "final": False}


def test_an_error_after_responses_says_how_many_came(capsys: pytest.CaptureFixture[str]) -> None:
    from tritonpy import TritonRequestError
    from tritonpy.server._infer_cli import print_infer_events

    def events() -> Iterator[Any]:
        yield stream_events()[0]
        raise TritonRequestError("UNKNOWN", "boom")

    with pytest.raises(TritonRequestError, match="boom"):
        print_infer_events(events(), as_json=False, model="m")
    assert capsys.readouterr().out.splitlines()[-1] == (
        "1 response(s), then the stream ended with an error:"
    )


def test_a_plain_json_document_names_its_sequence(capsys: pytest.CaptureFixture[str]) -> None:
    from tritonpy.client import InferEnd, InferNote, InferResponse, SequenceControl
    from tritonpy.server._infer_cli import print_infer_events

    out = [OutputTensor("SUM", "INT32", np.array([[7]], np.int32))]
    control = SequenceControl(9, start=True, end=True)
    events = [InferNote("a fresh id"), InferResponse(0, out), InferEnd(1, False, False, control)]
    print_infer_events(events, as_json=True, model="seq")
    captured = capsys.readouterr()
    assert captured.err == "tritonpy: a fresh id\n"
    assert json.loads(captured.out) == {
        "model": "seq",
        "outputs": [{"name": "SUM", "datatype": "INT32", "shape": [1, 1], "data": [[7]]}],
        "sequence": {"id": 9, "start": True, "end": True},
    }


def test_cli_help_documents_streams_and_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    from tritonpy.cli import main

    with pytest.raises(SystemExit):
        main(["infer", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for flag in ("--sequence-id ID", "--sequence-start", "--sequence-end"):
        assert flag in help_text
    assert "JSON lines, one {model, index, outputs} per response" in help_text
    assert "each response is printed as it arrives" in help_text
