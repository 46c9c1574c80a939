import tritonpy as tp


class Echo(tp.Model):
    inputs = {"VALUE": tp.Tensor("INT32", [1])}
    outputs = {"SUM": tp.Tensor("INT32", [1])}
    max_batch_size = 8

    def infer(self, VALUE):
        return {"SUM": VALUE}


TritonPythonModel = Echo
