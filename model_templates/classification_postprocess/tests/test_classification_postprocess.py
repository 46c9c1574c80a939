"""The classification_postprocess template under the fake pb_utils."""

import shutil
from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, parse_config_pbtxt

MODEL_DIR = Path(__file__).resolve().parents[1]
NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def config(top_k):
    result = parse_config_pbtxt((MODEL_DIR / "config.pbtxt").read_text())
    result["parameters"]["top_k"] = {"string_value": top_k}
    return result


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_top_k_of_known_logits():
    logits = np.array(
        [
            [0.0, 5.0, 1.0, -2.0, 3.0, 0.5, 0.0, 0.0, 4.0, 0.0],
            [9.0, 0.4, 0.3, 0.0, 0.0, 0.0, 0.0, 8.0, 0.0, 7.5],
        ],
        np.float32,
    )
    with ModelHarness(MODEL_DIR) as harness:
        assert harness.config["max_batch_size"] == 64
        out = harness.infer({"LOGITS": logits})
    assert out["CLASS_IDS"].tolist() == [[1, 8, 4, 2, 5], [0, 7, 9, 1, 2]]
    assert out["CLASS_IDS"].dtype == np.int64
    assert [[s.decode() for s in row] for row in out["LABELS"]] == [
        ["one", "eight", "four", "two", "five"],
        ["zero", "seven", "nine", "one", "two"],
    ]
    expected = np.take_along_axis(softmax(logits), out["CLASS_IDS"], axis=1)
    np.testing.assert_allclose(out["SCORES"], expected, rtol=1e-6)
    assert np.all(np.diff(out["SCORES"], axis=1) <= 0)


def test_random_batches_agree_with_a_full_sort():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(50, 10)).astype(np.float32) * 3
    with ModelHarness(MODEL_DIR, config=config("3")) as harness:
        out = harness.infer({"LOGITS": logits})
    expected_ids = np.argsort(-logits, axis=1)[:, :3]
    np.testing.assert_array_equal(out["CLASS_IDS"], expected_ids)
    assert out["SCORES"].shape == (50, 3)
    np.testing.assert_allclose(out["SCORES"][:, 0], softmax(logits).max(axis=1), rtol=1e-6)


def test_requests_with_different_class_counts_in_one_batch(tmp_path):
    model_dir = shutil.copytree(
        MODEL_DIR, tmp_path / "post", ignore=shutil.ignore_patterns("tests")
    )
    (model_dir / "labels.txt").write_text("cat\ndog\nbird\n", encoding="utf-8")
    with ModelHarness(model_dir, config=config("2")) as harness:
        results = harness.infer_requests(
            [
                {"LOGITS": np.array([[1.0, 3.0, 2.0]], np.float32)},
                {"LOGITS": np.array([[2.0, 1.0]], np.float32)},
                {"LOGITS": np.array([[0.0, 1.0, 5.0], [5.0, 1.0, 0.0]], np.float32)},
                {"LOGITS": np.zeros((1, 4), np.float32)},  # more classes than labels
            ]
        )
    assert results[0]["LABELS"].tolist() == [[b"dog", b"bird"]]
    assert results[1]["LABELS"].tolist() == [[b"cat", b"dog"]]
    assert results[2]["CLASS_IDS"].tolist() == [[2, 1], [0, 1]]
    assert isinstance(results[3], tp.TritonRequestError)
    assert results[3].code == "INVALID_ARG"
    assert "labels.txt names 3" in results[3].message


def test_top_k_larger_than_the_class_count_returns_every_class():
    with ModelHarness(MODEL_DIR, config=config("50")) as harness:
        out = harness.infer({"LOGITS": np.array([[0.0, 1.0, 2.0]], np.float32)})
    assert out["CLASS_IDS"].tolist() == [[2, 1, 0]]
    np.testing.assert_allclose(out["SCORES"].sum(), 1.0, rtol=1e-6)


def test_missing_labels_or_bad_top_k_fail_the_load(tmp_path):
    with pytest.raises(tp.DeclarationError, match="'top_k'"):
        ModelHarness(MODEL_DIR, config=config("zero"))
    model_dir = shutil.copytree(
        MODEL_DIR, tmp_path / "post", ignore=shutil.ignore_patterns("tests")
    )
    (model_dir / "labels.txt").unlink()
    with pytest.raises(tp.DeclarationError, match=r"labels\.txt"):
        ModelHarness(model_dir)
