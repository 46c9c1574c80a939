"""BLS callee: OUT = 2 * IN."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out = pb_utils.Tensor("OUT", value * 2)
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
