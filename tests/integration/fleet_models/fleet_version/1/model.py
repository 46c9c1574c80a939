"""A batched tritonpy model whose answer shows which version of it ran: Y = X * 2 and VERSION,
the model version Triton loaded (the name of its version folder). A rollout publishes the same
code as the next version; the answers tell the versions apart."""

import numpy as np

import tritonpy as tp


class Versioned(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1]), "VERSION": tp.Tensor("INT32", [1])}
    max_batch_size = 16

    def infer(self, X):
        version = np.full((len(X), 1), self.model_version, np.int32)
        return {"Y": X * 2, "VERSION": version}


TritonPythonModel = Versioned
