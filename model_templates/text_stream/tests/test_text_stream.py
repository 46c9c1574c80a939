"""The text_stream template under the fake pb_utils: one response per chunk, in order."""

from pathlib import Path

import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, parse_config_pbtxt

MODEL_DIR = Path(__file__).resolve().parents[1]
TEXT = "Triton streams. Each part is one response!  Does it end?\nYes.\nIt does"


def config(unit):
    result = parse_config_pbtxt((MODEL_DIR / "config.pbtxt").read_text())
    result["parameters"]["unit"] = {"string_value": unit}
    return result


def chunks(responses):
    assert [int(r["INDEX"][0]) for r in responses] == list(range(len(responses)))
    return [r["CHUNK"][0].decode() for r in responses]


def test_the_generator_makes_the_model_decoupled():
    with ModelHarness(MODEL_DIR) as harness:
        assert harness.decoupled
        assert harness.config["model_transaction_policy"] == {"decoupled": True}
        assert harness.config["max_batch_size"] == 0


def test_one_response_per_sentence():
    with ModelHarness(MODEL_DIR) as harness:
        responses = harness.infer_stream({"TEXT": TEXT})
    assert chunks(responses) == [
        "Triton streams.",
        "Each part is one response!",
        "Does it end?",
        "Yes.",
        "It does",
    ]


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("line", ["Triton streams. Each part is one response!  Does it end?", "Yes.", "It does"]),
        ("WORD", ["Triton", "streams.", "Each", "part", "is", "one", "response!", "Does"]),
    ],
)
def test_other_units(unit, expected):
    with ModelHarness(MODEL_DIR, config=config(unit)) as harness:
        responses = harness.infer_stream({"TEXT": TEXT})
    assert chunks(responses)[: len(expected)] == expected


def test_unicode_text_streams_unchanged():
    with ModelHarness(MODEL_DIR) as harness:
        responses = harness.infer_stream({"TEXT": "Grüße aus Köln. 東京は晴れ? Ja."})
    assert chunks(responses) == ["Grüße aus Köln.", "東京は晴れ?", "Ja."]


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    with ModelHarness(MODEL_DIR) as harness:
        responses = harness.infer_stream({"TEXT": 'He said "stop." Then (it ended.) Fine'})
    assert chunks(responses) == ['He said "stop."', "Then (it ended.)", "Fine"]


def test_empty_text_is_invalid_arg_before_any_chunk():
    with ModelHarness(MODEL_DIR) as harness:
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer_stream({"TEXT": "  \n "})
    assert caught.value.code == "INVALID_ARG"
    assert "input 'TEXT' has no sentence to stream" in caught.value.message


def test_an_unknown_unit_fails_the_load():
    with pytest.raises(tp.DeclarationError, match="parameter 'unit' is 'paragraph'"):
        ModelHarness(MODEL_DIR, config=config("paragraph"))


def test_a_cancelled_stream_stops_at_the_next_chunk():
    with ModelHarness(MODEL_DIR) as harness:
        received = harness.infer_stream({"TEXT": "A. B. C. D."}, cancel_after=2, errors="return")
    # the client read two chunks, then got its own CANCELLED (as from a real server)
    assert chunks(received[:-1]) == ["A.", "B."]
    assert received[-1].code == "CANCELLED"
