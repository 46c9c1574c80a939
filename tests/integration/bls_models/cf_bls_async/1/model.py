"""Two BLS calls gathered on Triton's event loop (async execute), then summed."""

import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils

import tritonpy as tp


class Both(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}

    async def execute(self, requests):
        return list(await asyncio.gather(*(self.answer(r) for r in requests)))

    async def answer(self, request):
        x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
        try:
            scaled, negated = await asyncio.gather(
                self.call_async("cf_target_scale", {"X": x}),
                self.call_async("cf_target_negate", {"X": [float(v) for v in x]}),
            )
        except tp.TritonRequestError as exc:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(exc.message))
        y = (scaled["Y"] + negated["Y"]).astype(np.float32)
        return pb_utils.InferenceResponse([pb_utils.Tensor("Y", y)])


TritonPythonModel = Both
