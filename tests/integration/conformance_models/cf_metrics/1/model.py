"""Declared metrics of every kind, the built-in ones, and metric misuse (INTERNAL errors)."""

import tritonpy as tp
from tritonpy import Counter, Gauge, Histogram


class MetricsModel(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1]), "TEXT": tp.Text()}
    outputs = {"Y": tp.Tensor("FP32", [1])}
    max_batch_size = 8
    builtin_metrics = True
    metrics = {
        "cf_rows": Counter("rows seen by cf_metrics"),
        "cf_last_x": Gauge("the last X, less one half"),
        "cf_x": Histogram("X values", buckets=[0.5, 1.0, 2.5]),
    }

    def infer(self, X, TEXT):
        for text in TEXT:
            if text == "misuse":
                self.metrics["cf_rows"].set(1.0)
            if text == "negative":
                self.metrics["cf_rows"].increment(-1.0)
        self.metrics["cf_rows"].increment(len(X))
        self.metrics["cf_last_x"].set(float(X[-1, 0]))
        self.metrics["cf_last_x"].decrement(0.5)
        for value in X[:, 0]:
            self.metrics["cf_x"].observe(float(value))
        return {"Y": X * 2}


TritonPythonModel = MetricsModel
