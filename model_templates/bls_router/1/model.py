"""Routes each text to one of two models by its length, with ``self.call`` (BLS).

Short texts (up to ``max_short_words`` words) go to ``short_model``, a fast word-list
classifier; longer ones to ``long_model``, which also reads negations sentence by sentence.
The rows of a merged batch are grouped by route: one call per model per batch, not per row.

config.pbtxt parameters (declared below): ``short_model``, ``long_model`` (model names in
the same repository) and ``max_short_words`` (default 12).
"""

from typing import Any, Dict, List

import numpy as np

import tritonpy as tp


class BlsRouter(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {
        "LABEL": tp.Text(),  # positive, negative or neutral
        "SCORE": tp.Tensor("FP32", [1]),  # from -1 (negative) to 1 (positive)
        "ROUTE": tp.Text(),  # the model that answered
    }
    max_batch_size = 32
    # config.pbtxt parameters, read and checked when the model loads
    short_model = tp.config_parameter("short_model", "bls_router_short")
    long_model = tp.config_parameter("long_model", "bls_router_long")
    max_short_words = tp.config_parameter("max_short_words", 12, cast=tp.parameters.positive_int)

    def route(self, text: str) -> str:
        """The model that answers ``text``: the condition of this router."""
        if len(text.split()) <= self.max_short_words:
            return self.short_model
        return self.long_model

    def infer(self, TEXT: List[str]) -> Dict[str, Any]:
        routes = [self.route(text) for text in TEXT]
        labels = [""] * len(TEXT)
        scores = np.zeros((len(TEXT), 1), np.float32)
        for model in dict.fromkeys(routes):  # each model once, in order of first use
            rows = [i for i, route in enumerate(routes) if route == model]
            answer = self.call(model, {"TEXT": [[TEXT[i]] for i in rows]})
            for position, row in enumerate(rows):
                labels[row] = answer["LABEL"][position, 0].decode("utf-8")
            scores[rows] = answer["SCORE"]
        return {"LABEL": labels, "SCORE": scores, "ROUTE": routes}


TritonPythonModel = BlsRouter
