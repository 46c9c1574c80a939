import tritonpy as tp


class Single(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 0

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = Single
