"""A running sum and mean per sequence with tritonpy: ``tp.Sequence`` declares the sequence
batcher (``tritonpy config`` writes it into config.pbtxt), tritonpy keeps each sequence's
state from ``start_sequence`` to its END or idle timeout, and ``infer`` sees one request."""

import tritonpy as tp


class RunningMean(tp.Model):
    inputs = {"VALUE": tp.Tensor("FP32", [4])}
    outputs = {"SUM": tp.Tensor("FP32", [4]), "MEAN": tp.Tensor("FP32", [4])}
    max_batch_size = 16
    sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60, max_candidate_sequences=16)

    def start_sequence(self, sequence):
        return {"sum": 0.0, "count": 0}

    def infer(self, VALUE, sequence):
        state = sequence.state
        total = state["sum"] = state["sum"] + VALUE
        state["count"] += 1
        return {"SUM": total, "MEAN": total / state["count"]}


TritonPythonModel = RunningMean
