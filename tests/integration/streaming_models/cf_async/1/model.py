"""async def infer on a batched model: Y = X * 3 for the merged rows; a negative value is an
InputError (that request alone fails), a value of 13 a RuntimeError (INTERNAL)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

import numpy as np

import tritonpy as tp


class Triple(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}
    max_batch_size = 8

    async def infer(self, X: np.ndarray) -> Dict[str, Any]:
        await asyncio.sleep(0.01)
        if (X < 0).any():
            raise tp.InputError("X has negative values; send values >= 0")
        if (X == 13).any():
            raise RuntimeError("13 is unlucky")
        return {"Y": X * 3}


TritonPythonModel = Triple
