"""Text, Bytes and JSON codecs, with TYPE_STRING edge cases."""

import tritonpy as tp


class Strings(tp.Model):
    inputs = {"TEXT": tp.Text(), "RAW": tp.Bytes(), "DOC": tp.JSON()}
    outputs = {
        "UPPER": tp.Text(),
        "RAW_REVERSED": tp.Bytes(),
        "RAW_LENGTH": tp.Tensor("INT32", [1]),
        "SUMMARY": tp.JSON(),
    }
    max_batch_size = 8

    def infer(self, TEXT, RAW, DOC):
        return {
            "UPPER": [t.upper() for t in TEXT],
            "RAW_REVERSED": [r[::-1] for r in RAW],
            "RAW_LENGTH": [len(r) for r in RAW],
            "SUMMARY": [{"text": t, "chars": len(t), "doc": d} for t, d in zip(TEXT, DOC)],
        }


TritonPythonModel = Strings
