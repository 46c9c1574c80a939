"""Score threshold + non-maximum suppression (OpenCV) over candidate boxes, one image per row.

config.pbtxt parameters: ``score_threshold``, ``iou_threshold``, ``max_detections`` (0: none).
"""

from typing import Any, Dict, List

import cv2
import numpy as np
from numpy.typing import NDArray

import tritonpy as tp


class DetectionPostprocess(tp.Model):
    inputs = {
        "BOXES": tp.Tensor("FP32", [-1, 4]),  # x, y, width, height per candidate
        "SCORES": tp.Tensor("FP32", [-1]),
    }
    outputs = {
        "DETECTIONS": tp.JSON(),  # per row: [{"box": [x, y, w, h], "score": s, "index": i}]
        "COUNT": tp.Tensor("INT32", [1]),
    }
    max_batch_size = 64
    # config.pbtxt parameters, read and checked when the model loads
    score_threshold = tp.config_parameter("score_threshold", 0.5, cast=float)
    iou_threshold = tp.config_parameter("iou_threshold", 0.45, cast=tp.parameters.fraction)
    max_detections = tp.config_parameter("max_detections", 100, cast=tp.parameters.non_negative_int)

    def infer(self, BOXES: NDArray[np.float32], SCORES: NDArray[np.float32]) -> Dict[str, Any]:
        if BOXES.shape[1] != SCORES.shape[1]:
            raise tp.InputError(
                f"inputs 'BOXES' and 'SCORES' disagree: {BOXES.shape[1]} boxes but "
                f"{SCORES.shape[1]} scores per row; send one score per box",
                input_name="SCORES",
            )
        detections: List[List[Dict[str, Any]]] = []
        for boxes, scores in zip(BOXES, SCORES):
            keep = cv2.dnn.NMSBoxes(boxes, scores, self.score_threshold, self.iou_threshold)
            keep = list(keep)[: self.max_detections or None]  # best first
            detections.append([{"box": boxes[i], "score": scores[i], "index": i} for i in keep])
        return {"DETECTIONS": detections, "COUNT": [len(d) for d in detections]}


TritonPythonModel = DetectionPostprocess
