"""Text and Bytes outputs returned as numpy object arrays of str and bytes, and a Text output
returned as a list of str (one per row), which tritonpy hands to pb_utils.Tensor as they are
(the stub encodes str as UTF-8). An input decoded with errors="surrogateescape" from invalid
UTF-8 gives a str that cannot be encoded back."""

import numpy as np

import tritonpy as tp


class TextArray(tp.Model):
    inputs = {"TEXT": tp.Text(errors="surrogateescape")}
    # UPPER first: a str the stub refuses is named where tritonpy meets it first
    outputs = {"UPPER": tp.Text(), "FORMS": tp.Text(dims=[3]), "RAW": tp.Bytes(dims=[2])}
    max_batch_size = 8

    def infer(self, TEXT):
        forms = np.array([[t, t.upper(), t[::-1]] for t in TEXT], dtype=object)
        raw = np.empty((len(TEXT), 2), dtype=object)
        raw[:, 0] = [t.encode("utf-8", "surrogateescape") for t in TEXT]
        raw[:, 1] = [t.upper() for t in TEXT]
        return {"UPPER": [t.upper() for t in TEXT], "FORMS": forms, "RAW": raw}


TritonPythonModel = TextArray
