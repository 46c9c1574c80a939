"""Ragged input grouped by shape (the default policy)."""

import tritonpy as tp


class Grouped(tp.Model):
    inputs = {"SEQ": tp.Tensor("FP32", [-1])}
    outputs = {"REVERSED": tp.Tensor("FP32", [-1]), "WIDTH": tp.Tensor("INT32", [1])}
    max_batch_size = 8

    def infer(self, SEQ):
        return {"REVERSED": SEQ[:, ::-1], "WIDTH": [SEQ.shape[1]] * len(SEQ)}


TritonPythonModel = Grouped
