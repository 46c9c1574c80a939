"""A running sum per sequence under the oldest strategy, numeric or string correlation ids.

The oldest strategy hands one ``execute()`` requests of several sequences: the state is kept
per ``request.correlation_id()`` (an int, or a str for a string id). There is no CORRID control
tensor: in release 24.10 a TYPE_STRING CORRID control makes every request fail
("unexpected number of string elements 2 for inference input 'CORRID', expecting 1").
BATCH tells the client how many requests that ``execute()`` received.
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
            key = request.correlation_id()
            if start.reshape(-1)[0]:
                self.sums[key] = 0
            if key not in self.sums:
                error = pb_utils.TritonError(f"sequence {key!r} was never started")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            self.sums[key] += int(value.sum())
            total = np.full(value.shape, self.sums[key], dtype=np.int32)
            batch = np.full(value.shape, len(requests), dtype=np.int32)
            if end.reshape(-1)[0]:
                del self.sums[key]
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("SUM", total), pb_utils.Tensor("BATCH", batch)]
                )
            )
        return responses
