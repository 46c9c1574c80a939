"""Stands for qa/python_models/async_execute_decouple: an async decoupled model that waits,
then answers each request with one data response carrying the FINAL flag itself."""

import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        for request in requests:
            wait = pb_utils.get_input_tensor_by_name(request, "WAIT_SECONDS").as_numpy()
            await asyncio.sleep(float(wait.max()))
            out = pb_utils.Tensor("DUMMY_OUT", np.zeros(wait.shape[0], np.float32))
            request.get_response_sender().send(
                pb_utils.InferenceResponse([out]),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        return None
