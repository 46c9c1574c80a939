"""Decoupled and sequence at once: per request, VALUE responses each carrying the running sum of
its sequence so far (by request.correlation_id()), then the final flag; VALUE = 0 sends the
sum once."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        for request in requests:
            value = int(pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()[0])
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()[0]
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()[0]
            key = request.correlation_id()
            if start:
                self.sums[key] = 0
            sender = request.get_response_sender()
            for _ in range(max(value, 1)):
                self.sums[key] = self.sums.get(key, 0) + (1 if value else 0)
                out = pb_utils.Tensor("SUM", np.array([self.sums[key]], np.int32))
                sender.send(pb_utils.InferenceResponse([out]))
            if end:
                self.sums.pop(key, None)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
