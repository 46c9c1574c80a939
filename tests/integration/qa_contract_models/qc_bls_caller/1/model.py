"""Stands for QA bls_request_rescheduling's wrong-return case: calls qc_returns with its MODE
through BLS and answers what the call gave: 'error: <message>' or 'value: <OUT>'."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            mode = pb_utils.get_input_tensor_by_name(request, "MODE")
            call = pb_utils.InferenceRequest(
                model_name="qc_returns", inputs=[mode], requested_output_names=["OUT"]
            )
            response = call.exec()
            if response.has_error():
                text = f"error: {response.error().message()}"
            else:
                out = pb_utils.get_output_tensor_by_name(response, "OUT").as_numpy()
                text = f"value: {int(out[0])}"
            result = pb_utils.Tensor("RESULT", np.array([text.encode()], dtype=object))
            responses.append(pb_utils.InferenceResponse([result]))
        return responses
