"""Text with variable dims: a list of words per row, without batching."""

import tritonpy as tp


class Words(tp.Model):
    inputs = {"WORDS": tp.Text(dims=[-1])}
    outputs = {"SORTED": tp.Text(dims=[-1]), "COUNT": tp.Tensor("INT32", [1])}

    def infer(self, WORDS):
        return {"SORTED": sorted(WORDS), "COUNT": [len(WORDS)]}


TritonPythonModel = Words
