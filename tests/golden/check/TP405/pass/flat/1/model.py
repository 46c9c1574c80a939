import tritonpy as tp


class Flat(tp.Model):
    inputs = {"MID": tp.Tensor("FP32", [-1, -1])}
    outputs = {"OUT": tp.Tensor("FP32", [-1, -1])}
    max_batch_size = 0

    def infer(self, MID):
        return {"OUT": MID}


TritonPythonModel = Flat
