"""BLS caller, written as NVIDIA's BLS example is: OUT = the callee's OUT (2 * IN); a callee's
error response becomes a TritonModelException with the callee's message."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN")
            call = pb_utils.InferenceRequest(
                model_name="kind_bls_callee",
                requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", value.as_numpy())],
            )
            reply = call.exec()
            if reply.has_error():
                raise pb_utils.TritonModelException(reply.error().message())
            out = pb_utils.get_output_tensor_by_name(reply, "OUT")
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
