import tritonpy as tp


class Post(tp.Model):
    inputs = {"MID": tp.Tensor("FP32", [-1])}
    outputs = {"OUT": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, MID):
        return {"OUT": MID}


TritonPythonModel = Post
