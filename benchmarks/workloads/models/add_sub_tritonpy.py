"""add_sub with tritonpy: the declarations replace the configuration and the request loop."""

import tritonpy as tp


class AddSub(tp.Model):
    inputs = {"INPUT0": tp.Tensor("FP32", [4]), "INPUT1": tp.Tensor("FP32", [4])}
    outputs = {"OUTPUT0": tp.Tensor("FP32", [4]), "OUTPUT1": tp.Tensor("FP32", [4])}

    def infer(self, INPUT0, INPUT1):
        return {"OUTPUT0": INPUT0 + INPUT1, "OUTPUT1": INPUT0 - INPUT1}


TritonPythonModel = AddSub
