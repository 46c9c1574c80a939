"""Softmax + top-k over classifier logits, with class names from ``labels.txt``.

config.pbtxt parameter ``top_k`` (default 5); ``labels.txt`` beside config.pbtxt holds one class
name per line, in class-id order.
"""

from typing import Any, Dict

import numpy as np
from numpy.typing import NDArray

import tritonpy as tp


class ClassificationPostprocess(tp.Model):
    inputs = {"LOGITS": tp.Tensor("FP32", [-1])}
    outputs = {
        "SCORES": tp.Tensor("FP32", [-1]),  # top-k softmax probabilities, best first
        "CLASS_IDS": tp.Tensor("INT64", [-1]),
        "LABELS": tp.Text(dims=[-1]),  # top-k class names
    }
    max_batch_size = 64
    top_k = tp.config_parameter("top_k", 5, cast=tp.parameters.positive_int)  # config.pbtxt

    def setup(self) -> None:
        # UTF-8 bytes: the stub sends bytes as they are (a str is encoded on every request)
        names = [name.encode("utf-8") for name in self.read_labels()]
        self.labels = np.array(names, dtype=object)

    def infer(self, LOGITS: NDArray[np.float32]) -> Dict[str, Any]:
        classes = LOGITS.shape[1]
        if not 0 < classes <= len(self.labels):
            raise tp.InputError(
                f"input 'LOGITS': {classes} classes, but labels.txt names "
                f"{len(self.labels)}; send 1 to {len(self.labels)} logits per row",
                input_name="LOGITS",
            )
        k = min(self.top_k, classes)
        shifted = LOGITS - LOGITS.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        top = np.argpartition(-probs, k - 1, axis=1)[:, :k]  # the k best, unordered
        order = np.argsort(-np.take_along_axis(probs, top, axis=1), axis=1, kind="stable")
        ids = np.take_along_axis(top, order, axis=1)
        return {
            "SCORES": np.take_along_axis(probs, ids, axis=1),
            "CLASS_IDS": ids,
            "LABELS": self.labels[ids],
        }


TritonPythonModel = ClassificationPostprocess
