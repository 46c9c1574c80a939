"""A decoupled model streaming 16 responses per request with tritonpy: infer yields one
token per response (a yielding infer makes the model decoupled)."""

import numpy as np

import tritonpy as tp

RESPONSES = 16
VOCAB = 32000


class Stream(tp.Model):
    inputs = {"PROMPT": tp.Tensor("INT64", [16])}
    outputs = {"TOKEN": tp.Tensor("INT64", [1])}

    def infer(self, PROMPT):
        state = int(PROMPT.sum())
        for _ in range(RESPONSES):
            state = (state * 1103515245 + 12345) % 2147483648  # the next "token"
            yield {"TOKEN": np.array([state % VOCAB], dtype=np.int64)}


TritonPythonModel = Stream
