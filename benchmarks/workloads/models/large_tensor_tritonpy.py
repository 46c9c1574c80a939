"""8 MiB in, 8 MiB out with tritonpy: infer sees the merged rows and returns them scaled."""

import numpy as np

import tritonpy as tp

SCALE, SHIFT = 0.5, 0.25


class LargeTensor(tp.Model):
    inputs = {"DATA": tp.Tensor("FP32", [1024, 2048])}
    outputs = {"SCALED": tp.Tensor("FP32", [1024, 2048])}
    max_batch_size = 4

    def infer(self, DATA):
        scaled = np.multiply(DATA, SCALE, dtype=np.float32)
        scaled += SHIFT
        return {"SCALED": scaled}


TritonPythonModel = LargeTensor
