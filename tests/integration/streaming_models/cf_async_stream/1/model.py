"""An async generator infer: N parts (I = 0..N-1), each after an await; N < 0 is an
InputError before the first part, N == 7 a RuntimeError after three parts."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict

import numpy as np

import tritonpy as tp


class Count(tp.Model):
    inputs = {"N": tp.Tensor("INT32", [1])}
    outputs = {"I": tp.Tensor("INT32", [1])}

    async def infer(self, N: np.ndarray) -> AsyncIterator[Dict[str, Any]]:
        count = int(N[0])
        if count < 0:
            raise tp.InputError(f"N is {count}; send a count >= 0")
        for index in range(count):
            await asyncio.sleep(0.001)
            if count == 7 and index == 3:
                raise RuntimeError("seven stops at three")
            yield {"I": np.array([index], np.int32)}


TritonPythonModel = Count
