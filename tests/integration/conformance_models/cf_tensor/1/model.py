"""Tensor codec: dtypes kept, rows merged, same_kind output cast."""

import numpy as np

import tritonpy as tp


class TensorModel(tp.Model):
    inputs = {
        "F32": tp.Tensor("FP32", [3]),
        "F16": tp.Tensor("FP16", [2]),
        "FLAGS": tp.Tensor("BOOL", [2]),
        "I64": tp.Tensor("INT64", [1]),
    }
    outputs = {
        "F32_X2": tp.Tensor("FP32", [3]),
        "F16_NEG": tp.Tensor("FP16", [2]),
        "FLAGS_NOT": tp.Tensor("BOOL", [2]),
        "I64_SUM": tp.Tensor("INT32", [1]),
        "ROWS": tp.Tensor("INT64", [1]),
    }
    max_batch_size = 16

    def infer(self, F32, F16, FLAGS, I64):
        return {
            "F32_X2": F32.astype(np.float64) * 2,  # float64 -> FP32 by the cast policy
            "F16_NEG": -F16,
            "FLAGS_NOT": ~FLAGS,
            "I64_SUM": I64 + 1,  # int64 -> INT32 by the cast policy
            "ROWS": np.full(len(F32), len(F32)),
        }


TritonPythonModel = TensorModel
