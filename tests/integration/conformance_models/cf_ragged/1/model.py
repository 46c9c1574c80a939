"""Ragged input padded across requests, with a padded output cut back per request."""

import tritonpy as tp


class Ragged(tp.Model):
    inputs = {"TOKENS": tp.Tensor("INT64", [-1], ragged="pad", pad_value=0)}
    outputs = {
        "LENGTH": tp.Tensor("INT64", [1]),
        "TOTAL": tp.Tensor("INT64", [1]),
        "SHIFTED": tp.Tensor("INT64", [-1], ragged="pad"),
    }
    max_batch_size = 8

    def infer(self, TOKENS):
        shifted = tp.Padded(TOKENS.values + TOKENS.mask, TOKENS.lengths, TOKENS.axes)
        return {
            "LENGTH": TOKENS.lengths,
            "TOTAL": TOKENS.values.sum(axis=1),
            "SHIFTED": shifted,
        }


TritonPythonModel = Ragged
