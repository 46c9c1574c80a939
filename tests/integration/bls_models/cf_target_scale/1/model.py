"""BLS target: doubles X; a negative X is the client's mistake (InputError)."""

import numpy as np

import tritonpy as tp


class Scale(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1]), "N": tp.Tensor("INT32", [1])}

    def infer(self, X):
        if (X < 0).any():
            raise tp.InputError(f"input 'X': expected values >= 0, got {X.min()}")
        return {"Y": X * 2, "N": np.array([X.size], np.int32)}


TritonPythonModel = Scale
