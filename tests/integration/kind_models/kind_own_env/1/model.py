"""A model with its own environment (requirements.txt beside config.pbtxt): WINDOWS counts the
sliding windows of 2 that more_itertools finds in each row of X, PYTHON is the Python that ran
it (the environment's, not the server's)."""

import sys

import more_itertools
import numpy as np

import tritonpy as tp


class OwnEnv(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"WINDOWS": tp.Tensor("INT64", [1]), "PYTHON": tp.Text()}
    max_batch_size = 8

    def infer(self, X):
        counts = [more_itertools.ilen(more_itertools.windowed(row, 2)) for row in X]
        python = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return {"WINDOWS": np.array(counts, np.int64)[:, None], "PYTHON": [python] * len(X)}


TritonPythonModel = OwnEnv
