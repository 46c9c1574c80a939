"""Plain tensor in, text out as a numpy array of str and bytes (``labels[ids]``): requests take
tritonpy's plain-tensor path, which hands the arrays to pb_utils.Tensor as they are and does
not ask which outputs a request wants (the stub drops the others). The label of id 3 holds a
lone surrogate, which the stub cannot encode."""

import numpy as np

import tritonpy as tp


class Labels(tp.Model):
    inputs = {"SCORES": tp.Tensor("FP32", [-1])}
    outputs = {
        "IDS": tp.Tensor("INT64", [2]),
        "NAMES": tp.Text(dims=[2]),
        "FIRST": tp.Bytes(dims=[1]),
    }
    max_batch_size = 8

    def setup(self):
        self.labels = np.array(["zero", "ünï", "two", "bad \udcff", b"four"], dtype=object)

    def infer(self, SCORES):
        ids = np.argsort(-SCORES, axis=1, kind="stable")[:, :2]
        first = np.empty((len(ids), 1), dtype=object)
        first[:, 0] = [f"id {i}".encode() for i in ids[:, 0]]
        return {"IDS": ids, "NAMES": self.labels[ids], "FIRST": first}


TritonPythonModel = Labels
