"""Logits [1000] -> softmax top-5 ids and scores with tritonpy: infer sees the merged rows."""

import numpy as np

import tritonpy as tp

TOP_K = 5


class Postprocess(tp.Model):
    inputs = {"LOGITS": tp.Tensor("FP32", [1000])}
    outputs = {"IDS": tp.Tensor("INT64", [TOP_K]), "SCORES": tp.Tensor("FP32", [TOP_K])}
    max_batch_size = 64

    def infer(self, LOGITS):
        shifted = LOGITS - LOGITS.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        top = np.argpartition(-probs, TOP_K - 1, axis=1)[:, :TOP_K]
        order = np.argsort(-np.take_along_axis(probs, top, axis=1), axis=1, kind="stable")
        ids = np.take_along_axis(top, order, axis=1)
        return {"IDS": ids, "SCORES": np.take_along_axis(probs, ids, axis=1)}


TritonPythonModel = Postprocess
