"""Decoupled model: for IN = n, send n responses each carrying OUT = n * n, then the final flag.

Own rendition of the behaviour of NVIDIA python_backend's decoupled ``square`` example. n = 0
sends only the final flag (an empty stream).
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])
        out_config = pb_utils.get_output_config_by_name(self.model_config, "OUT")
        self.out_dtype = pb_utils.triton_string_to_numpy(out_config["data_type"])

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            sender = request.get_response_sender()
            if n < 0:
                sender.send(
                    pb_utils.InferenceResponse(
                        error=pb_utils.TritonError(
                            f"IN must be >= 0, got {n}", pb_utils.TritonError.INVALID_ARG
                        )
                    ),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
                continue
            for _ in range(n):
                out = pb_utils.Tensor("OUT", np.array([n * n], dtype=self.out_dtype))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
