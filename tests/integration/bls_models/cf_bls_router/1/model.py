"""Routing: rows with a non-negative mean go to cf_target_scale, the others to
cf_target_negate."""

import tritonpy as tp


class Router(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1]), "ROUTE": tp.Text()}

    def infer(self, X):
        target = "cf_target_scale" if X.mean() >= 0 else "cf_target_negate"
        return {"Y": self.call(target, {"X": X})["Y"], "ROUTE": target}


TritonPythonModel = Router
