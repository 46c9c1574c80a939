import numpy as np

import tritonpy as tp


class RunningSum(tp.Model):
    inputs = {"VALUE": tp.Tensor("INT32", [1])}
    outputs = {"SUM": tp.Tensor("INT32", [1])}
    max_batch_size = 8
    sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60)

    def start_sequence(self, sequence):
        return {"sum": 0}

    def infer(self, VALUE, sequence):
        sequence.state["sum"] += int(VALUE.sum())
        return {"SUM": np.array([[sequence.state["sum"]]], np.int32)}


TritonPythonModel = RunningSum
