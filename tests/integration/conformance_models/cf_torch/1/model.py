"""TorchTensor codec: DLPack in and out."""

import torch

import tritonpy as tp


class TorchModel(tp.Model):
    inputs = {"X": tp.TorchTensor("FP32", [4])}
    outputs = {"Y": tp.TorchTensor("FP32", [2]), "NORM": tp.Tensor("FP32", [1])}
    max_batch_size = 8

    def setup(self):
        self.weight = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 2.0]])

    def infer(self, X):
        return {"Y": X @ self.weight, "NORM": X.norm(dim=1).numpy()}


TritonPythonModel = TorchModel
