"""The detection_postprocess template under the fake pb_utils."""

import json
from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, parse_config_pbtxt

pytest.importorskip("cv2", reason="this template's NMS is OpenCV's: pip install 'tritonpy[image]'")

MODEL_DIR = Path(__file__).resolve().parents[1]

# two heavily overlapping boxes (IoU 0.68), one apart, one below the score threshold
BOXES = np.array(
    [[10, 10, 100, 100], [20, 20, 100, 100], [300, 300, 50, 40], [400, 10, 30, 30]], np.float32
)
SCORES = np.array([0.8, 0.9, 0.6, 0.3], np.float32)


def config(**parameters):
    result = parse_config_pbtxt((MODEL_DIR / "config.pbtxt").read_text())
    for key, value in parameters.items():
        result["parameters"][key] = {"string_value": value}
    return result


def detections(out):
    return [json.loads(row[0]) for row in out["DETECTIONS"]]


def test_nms_drops_the_weaker_overlapping_box_and_low_scores():
    with ModelHarness(MODEL_DIR) as harness:
        out = harness.infer({"BOXES": BOXES[None], "SCORES": SCORES[None]})
    (found,) = detections(out)
    assert [d["index"] for d in found] == [1, 2]  # best first; box 0 suppressed, box 3 too low
    assert found[0]["box"] == [20, 20, 100, 100]
    assert found[0]["score"] == pytest.approx(0.9)
    assert out["COUNT"].tolist() == [[2]] and out["COUNT"].dtype == np.int32


def test_parameters_change_thresholds_and_limit():
    with ModelHarness(MODEL_DIR, config=config(iou_threshold="0.8", score_threshold="0.2")) as h:
        loose = h.infer({"BOXES": BOXES[None], "SCORES": SCORES[None]})
    assert [d["index"] for d in detections(loose)[0]] == [1, 0, 2, 3]
    with ModelHarness(MODEL_DIR, config=config(score_threshold="0.2", max_detections="1")) as h:
        limited = h.infer({"BOXES": BOXES[None], "SCORES": SCORES[None]})
    assert [d["index"] for d in detections(limited)[0]] == [1]
    assert limited["COUNT"].tolist() == [[1]]


def test_rows_and_requests_of_different_candidate_counts():
    nothing = np.zeros((1, 2), np.float32)  # two candidates, both scored 0
    with ModelHarness(MODEL_DIR) as harness:
        results = harness.infer_requests(
            [
                {
                    "BOXES": np.stack([BOXES, BOXES[::-1]]),
                    "SCORES": np.stack([SCORES, SCORES[::-1]]),
                },
                {"BOXES": BOXES[None, :2], "SCORES": nothing},
                {"BOXES": BOXES[None, :3], "SCORES": SCORES[None, :2]},  # 3 boxes, 2 scores
            ]
        )
    first, second = detections(results[0])
    assert [d["index"] for d in first] == [1, 2]
    assert [d["index"] for d in second] == [2, 1]  # same boxes, reversed order
    assert results[0]["COUNT"].tolist() == [[2], [2]]
    assert detections(results[1]) == [[]] and results[1]["COUNT"].tolist() == [[0]]
    assert isinstance(results[2], tp.TritonRequestError)
    assert results[2].code == "INVALID_ARG"
    assert "one score per box" in results[2].message


def test_a_bad_threshold_fails_the_load():
    with pytest.raises(tp.DeclarationError, match="parameter 'iou_threshold' is 'high'"):
        ModelHarness(MODEL_DIR, config=config(iou_threshold="high"))
