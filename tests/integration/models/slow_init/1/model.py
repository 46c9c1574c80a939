"""initialize() sleeps 60 s: used to check the startup timeout."""

import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(60)

    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                output_tensors=[
                    pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())
                ]
            )
            for r in requests
        ]
