"""BLS target: the other branch of the router."""

import tritonpy as tp


class Negate(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}

    def infer(self, X):
        return {"Y": -X}


TritonPythonModel = Negate
