"""Two BLS calls gathered in an ``async def infer`` (run on Triton's event loop), summed."""

import asyncio

import tritonpy as tp


class Both(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}

    async def infer(self, X):
        scaled, negated = await asyncio.gather(
            self.call_async("cf_target_scale", {"X": X}),
            self.call_async("cf_target_negate", {"X": [float(v) for v in X]}),
        )
        return {"Y": scaled["Y"] + negated["Y"]}


TritonPythonModel = Both
