"""Tests of the model in this directory, on tritonpy's fake pb_utils (no server needed):
``python -m pytest`` this directory."""

from pathlib import Path

import pytest

import tritonpy as tp

MODEL_DIR = Path(__file__).resolve().parent


@pytest.fixture
def model(triton_model):
    return triton_model(MODEL_DIR)  # config.pbtxt + 1/model.py, closed after the test


def test_each_row_comes_back_upper_cased(model):
    out = model.infer({"TEXT": [["hello"], ["Grüße"]]})  # two rows, sent as TYPE_STRING
    assert out["UPPER"].tolist() == [[b"HELLO"], ["GRÜSSE".encode()]]


def test_requests_batched_together_each_get_their_own_answer(model):
    first, second = model.infer_requests([{"TEXT": [["a"]]}, {"TEXT": [["b"], ["c"]]}])
    assert first["UPPER"].tolist() == [[b"A"]]
    assert second["UPPER"].tolist() == [[b"B"], [b"C"]]


def test_text_that_is_not_utf8_is_refused_with_invalid_arg(model):
    with pytest.raises(tp.TritonRequestError) as refused:
        model.infer({"TEXT": [[b"\xff"]]})
    assert refused.value.code == "INVALID_ARG"
