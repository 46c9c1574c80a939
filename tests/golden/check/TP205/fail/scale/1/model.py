import tritonpy as tp


class Scale(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1]), "FACTOR": tp.Tensor("FP32", [1], default=None)}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, X, FACTOR):
        return {"Y": X}


TritonPythonModel = Scale
