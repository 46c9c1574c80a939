"""The synchronous form of qa_bls_final_relay_async: exec(decoupled=True) on a callee whose
only response carries the FINAL flag; each response's DUMMY_OUT is relayed."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            wait = pb_utils.get_input_tensor_by_name(request, "WAIT_SECONDS").as_numpy()
            responses = pb_utils.InferenceRequest(
                model_name="qa_final_data",
                inputs=[pb_utils.Tensor("WAIT_SECONDS", wait)],
                requested_output_names=["DUMMY_OUT"],
            ).exec(decoupled=True)
            sender = request.get_response_sender()
            for response in responses:
                out = pb_utils.get_output_tensor_by_name(response, "DUMMY_OUT").as_numpy()
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("DUMMY_OUT", out)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
