import tritonpy as tp


class Pre(tp.Model):
    inputs = {"IN": tp.Tensor("FP32", [-1])}
    outputs = {"MID": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, IN):
        return {"MID": IN}


TritonPythonModel = Pre
