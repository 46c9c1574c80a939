"""No batching: infer runs once per request, values without a batch dimension."""

import numpy as np

import tritonpy as tp


class Unbatched(tp.Model):
    inputs = {"MATRIX": tp.Tensor("FP64", [-1, -1]), "NAME": tp.Text()}
    outputs = {"TRACE": tp.Tensor("FP64", [1]), "GREETING": tp.Text()}

    def infer(self, MATRIX, NAME):
        if MATRIX.shape[0] != MATRIX.shape[1]:
            raise tp.InputError(
                f"input 'MATRIX': expected a square matrix, got shape {list(MATRIX.shape)}"
            )
        return {"TRACE": [np.trace(MATRIX)], "GREETING": f"hello, {NAME}"}


TritonPythonModel = Unbatched
