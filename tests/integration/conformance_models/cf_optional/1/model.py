"""Optional inputs: with a default, and without one."""

import tritonpy as tp


class OptionalInputs(tp.Model):
    inputs = {
        "X": tp.Tensor("FP32", [2]),
        "FACTOR": tp.Tensor("FP32", [1], default=10.0),
        "NOTE": tp.Text(optional=True),
    }
    outputs = {"Y": tp.Tensor("FP32", [2]), "NOTE_OUT": tp.Text()}
    max_batch_size = 8

    def infer(self, X, FACTOR, NOTE):
        notes = NOTE if NOTE is not None else ["(none)"] * len(X)
        return {"Y": X * FACTOR, "NOTE_OUT": notes}


TritonPythonModel = OptionalInputs
