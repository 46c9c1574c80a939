"""A running sum per sequence, string correlation ids handed in as a TYPE_STRING CORRID control
(Triton's documented way; in release 24.10 the server refuses every request to such a model
before it runs: "unexpected number of string elements 2 for inference input 'CORRID',
expecting 1")."""

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
            key = pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy().reshape(-1)[0]
            if start.reshape(-1)[0]:
                self.sums[key] = 0
            self.sums[key] = self.sums.get(key, 0) + int(value.sum())
            total = np.full(value.shape, self.sums[key], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", total)]))
        return responses
