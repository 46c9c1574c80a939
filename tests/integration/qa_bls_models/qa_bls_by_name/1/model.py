"""Stands for qa/python_models/bls_simple: the model to call is named by the MODEL_NAME
input, handed to InferenceRequest as it comes out of the tensor (bytes), with the request's
trace passed on; the callee's outputs (none for an error response) are answered."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            name = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME").as_numpy()[0]
            callee = pb_utils.InferenceRequest(
                model_name=name,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[
                    pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                    pb_utils.get_input_tensor_by_name(request, "INPUT1"),
                ],
                trace=request.trace(),
            ).exec()
            responses.append(pb_utils.InferenceResponse(callee.output_tensors()))
        return responses
