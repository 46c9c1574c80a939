"""A running sum per sequence keyed by a TYPE_STRING CORRID control tensor.

In release 24.10 the server fails every request to this model before execute() runs
("unexpected number of string elements 2 for inference input 'CORRID', expecting 1"): the
load test shows how perf names that refusal. The code is what such a model would run.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()
            corrid = pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy()
            out = np.zeros_like(value)
            for row in range(value.shape[0]):
                key = corrid.reshape(-1)[row]
                if start[row][0]:
                    self.sums[key] = 0
                self.sums[key] = self.sums.get(key, 0) + int(value[row][0])
                out[row][0] = self.sums[key]
                if end[row][0]:
                    self.sums.pop(key, None)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", out)]))
        return responses
