import tritonpy_golden_no_such_package  # noqa: F401  (the import is the point)

import tritonpy as tp


class Double(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = Double
