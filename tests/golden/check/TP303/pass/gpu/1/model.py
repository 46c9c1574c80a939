import tritonpy as tp


class OnGpu(tp.Model):
    inputs = {"X": tp.TorchTensor("FP32", [-1], device="cuda")}
    outputs = {"Y": tp.TorchTensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = OnGpu
