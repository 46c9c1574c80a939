"""Decoupled, written as NVIDIA's ``square`` example is: for IN = n, n responses each carrying
OUT = n * n, then a response with only the final flag.

A negative IN gets one error response (with the final flag). The optional config parameter
FAIL_EVERY = k makes every k-th request (the k-th, 2k-th, ...) fail mid-stream: one response,
then an error response with the final flag.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        parameter = (config.get("parameters") or {}).get("FAIL_EVERY") or {}
        self.fail_every = int(parameter.get("string_value") or 0)
        self.seen = 0

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            self.seen += 1
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            sender = request.get_response_sender()
            out = pb_utils.Tensor("OUT", np.array([n * n], dtype=np.int32))
            failing = self.fail_every > 0 and self.seen % self.fail_every == 0
            if n < 0 or failing:
                if failing:
                    sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
                problem = f"IN must be >= 0, got {n}" if n < 0 else f"request {self.seen} fails"
                error = pb_utils.TritonError(problem, pb_utils.TritonError.INVALID_ARG)
                sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                continue
            for _ in range(n):
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=final)
        return None
