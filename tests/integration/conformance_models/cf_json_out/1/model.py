"""Text and Bytes inputs and a JSON output of a batched model: the direct path (one pass
over the rows each way). A value JSON cannot encode is named with its element."""

import numpy as np

import tritonpy as tp


class JsonOut(tp.Model):
    inputs = {"TEXT": tp.Text(), "RAW": tp.Bytes()}
    outputs = {"STATS": tp.JSON(), "UPPER": tp.Text()}
    max_batch_size = 8

    def infer(self, TEXT, RAW):
        stats = [
            {"chars": len(t), "words": t.split(), "half": np.float32(len(r)) / 2}
            if t != "set"
            else {"bad": {1}}
            for t, r in zip(TEXT, RAW)
        ]
        return {"STATS": stats, "UPPER": [t.upper() for t in TEXT]}


TritonPythonModel = JsonOut
