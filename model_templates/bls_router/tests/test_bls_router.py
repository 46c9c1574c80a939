"""The bls_router template under the fake pb_utils, its members registered as BLS targets."""

from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, parse_config_pbtxt

MODEL_DIR = Path(__file__).resolve().parents[1]
SHORT = MODEL_DIR / "members" / "short"
LONG = MODEL_DIR / "members" / "long"
LONG_TEXT = (
    "The screen is not bad at all. The battery is great and charging is fast. Shipping was slow."
)


@pytest.fixture
def members():
    with ModelHarness(SHORT) as short, ModelHarness(LONG) as long:
        yield short, long


@pytest.fixture
def router(members):
    short, long = members
    with ModelHarness(MODEL_DIR) as harness:
        harness.register_bls_model("bls_router_short", short)
        harness.register_bls_model("bls_router_long", long)
        yield harness


def texts(*values):
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = [v.encode() for v in values]
    return array


def test_short_texts_go_to_the_fast_model(router):
    out = router.infer({"TEXT": texts("great and fast", "awful", "it is a phone")})
    assert out["ROUTE"].ravel().tolist() == [b"bls_router_short"] * 3
    assert out["LABEL"].ravel().tolist() == [b"positive", b"negative", b"neutral"]
    np.testing.assert_allclose(out["SCORE"].ravel(), [2 / 3, -1.0, 0.0], rtol=1e-6)


def test_long_texts_go_to_the_careful_model(router):
    out = router.infer({"TEXT": texts(LONG_TEXT)})
    assert out["ROUTE"].tolist() == [[b"bls_router_long"]]
    # "not bad" counts as positive there; the fast model would have seen one bad word
    assert out["LABEL"].tolist() == [[b"positive"]]
    np.testing.assert_allclose(out["SCORE"], [[1 / 3]], rtol=1e-6)


def test_a_mixed_batch_calls_each_member_once(router, members):
    short, long = members
    results = router.infer_requests(
        [{"TEXT": texts("love it")}, {"TEXT": texts(LONG_TEXT, "so bad")}]
    )
    assert results[0]["ROUTE"].tolist() == [[b"bls_router_short"]]
    assert results[1]["ROUTE"].ravel().tolist() == [b"bls_router_long", b"bls_router_short"]
    assert results[1]["LABEL"].ravel().tolist() == [b"positive", b"negative"]
    assert (router.execute_calls, short.execute_calls, long.execute_calls) == (1, 1, 1)


def test_the_threshold_is_a_parameter():
    config = parse_config_pbtxt((MODEL_DIR / "config.pbtxt").read_text())
    config["parameters"]["max_short_words"] = {"string_value": "1"}
    with ModelHarness(MODEL_DIR, config=config) as harness:
        harness.register_bls_model("bls_router_short", SHORT)
        harness.register_bls_model("bls_router_long", LONG)
        out = harness.infer({"TEXT": texts("good", "good phone")})
    assert out["ROUTE"].ravel().tolist() == [b"bls_router_short", b"bls_router_long"]


def test_a_member_error_reaches_the_client(router):
    def broken(inputs):
        raise tp.InputError("input 'TEXT': this model only reads English", input_name="TEXT")

    router.register_bls_model("bls_router_short", broken)
    with pytest.raises(tp.TritonRequestError) as caught:
        router.infer({"TEXT": texts("très bien")})
    assert caught.value.code == "INTERNAL"  # Triton 24.10 passes BLS errors on as INTERNAL
    assert "this model only reads English" in caught.value.message
