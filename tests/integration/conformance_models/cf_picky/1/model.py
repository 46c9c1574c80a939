"""Per-request error isolation: a poison row fails its request only."""

import numpy as np

import tritonpy as tp


class Picky(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"LENGTH": tp.Tensor("INT32", [1])}
    max_batch_size = 8

    def infer(self, TEXT):
        if "poison" in TEXT:
            raise tp.InputError("input 'TEXT': expected anything but 'poison', got 'poison'")
        if "crash" in TEXT:
            raise ZeroDivisionError("division by zero")
        if "wrong-rows" in TEXT:
            return {"LENGTH": np.zeros((len(TEXT) + 1, 1), np.int32)}
        return {"LENGTH": np.array([len(t) for t in TEXT], np.int32)}


TritonPythonModel = Picky
