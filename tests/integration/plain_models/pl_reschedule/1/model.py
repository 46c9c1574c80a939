"""Reschedules each request until it has been executed three times, then answers how many
times it ran (non-decoupled: None in the returned list for a rescheduled request)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.runs = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            key = int(pb_utils.get_input_tensor_by_name(request, "KEY").as_numpy()[0])
            self.runs[key] = self.runs.get(key, 0) + 1
            if self.runs[key] < 3:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                responses.append(None)
                continue
            runs = np.array([self.runs.pop(key)], np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("RUNS", runs)]))
        return responses
