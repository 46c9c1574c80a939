"""UTF-8 strings in; upper-cased strings and a JSON document per row out, with tritonpy."""

import tritonpy as tp


class Text(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"UPPER": tp.Text(), "STATS": tp.JSON()}
    max_batch_size = 64

    def infer(self, TEXT):
        return {
            "UPPER": [t.upper() for t in TEXT],
            "STATS": [{"chars": len(t), "words": len(t.split())} for t in TEXT],
        }


TritonPythonModel = Text
