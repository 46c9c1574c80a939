"""Declares cf_metrics' counter family too: one family, one series per model."""

import tritonpy as tp
from tritonpy import Counter


class TwinModel(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1])}
    outputs = {"Y": tp.Tensor("FP32", [1])}
    max_batch_size = 8
    metrics = {"cf_rows": Counter("rows seen by cf_metrics_twin")}

    def infer(self, X):
        self.metrics["cf_rows"].increment(10 * len(X))
        return {"Y": X}


TritonPythonModel = TwinModel
