"""Stands for qa/python_models/async_execute_decouple_bls: awaits a decoupled BLS call
(async_exec(decoupled=True)) and relays every response's DUMMY_OUT, reading each one's
output (a response without it would fail this model), then closes its own stream."""

import asyncio

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def _relay(self, request):
        wait = pb_utils.get_input_tensor_by_name(request, "WAIT_SECONDS").as_numpy()
        responses = await pb_utils.InferenceRequest(
            model_name="qa_final_data",
            inputs=[pb_utils.Tensor("WAIT_SECONDS", wait)],
            requested_output_names=["DUMMY_OUT"],
        ).async_exec(decoupled=True)
        sender = request.get_response_sender()
        for response in responses:
            out = pb_utils.get_output_tensor_by_name(response, "DUMMY_OUT").as_numpy()
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("DUMMY_OUT", out)]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    async def execute(self, requests):
        await asyncio.gather(*(self._relay(request) for request in requests))
        return None
