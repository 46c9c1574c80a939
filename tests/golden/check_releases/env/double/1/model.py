import tritonpy as tp


class Double(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = Double
