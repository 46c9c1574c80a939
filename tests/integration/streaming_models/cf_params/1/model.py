"""Request parameters per row: Y = X + parameters["offset"], ECHO = the row's parameters as
sorted JSON; parameters["respond"] asks for a tp.Response with response parameters (which
Triton 24.10's Python backend refuses)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import numpy as np

import tritonpy as tp
from tritonpy import Response


class Params(tp.Model):
    inputs = {"X": tp.Tensor("INT32", [1])}
    outputs = {"Y": tp.Tensor("INT32", [1]), "ECHO": tp.Text()}
    max_batch_size = 8

    def infer(self, X: np.ndarray, parameters: List[Dict[str, Any]]) -> Any:
        offsets = np.array([[int(p.get("offset", 0))] for p in parameters], np.int32)
        outputs = {
            "Y": X + offsets,
            "ECHO": [json.dumps(p, sort_keys=True) for p in parameters],
        }
        if any(p.get("respond") for p in parameters):
            return Response(outputs, parameters={"rows": len(X)})
        return outputs


TritonPythonModel = Params
