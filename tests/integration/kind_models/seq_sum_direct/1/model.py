"""A running sum per sequence, read from the sequence batcher's control tensors.

With the direct strategy each batch slot holds one sequence; a request's row carries START,
END, READY (int32 0/1) and CORRID (uint64). The sum starts at START and is dropped at END.
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
                key = int(corrid[row][0])
                if start[row][0]:
                    self.sums[key] = 0
                if key not in self.sums:
                    responses.append(
                        pb_utils.InferenceResponse(
                            error=pb_utils.TritonError(f"sequence {key} was never started")
                        )
                    )
                    break
                self.sums[key] += int(value[row][0])
                out[row][0] = self.sums[key]
                if end[row][0]:
                    del self.sums[key]
            else:
                responses.append(
                    pb_utils.InferenceResponse([pb_utils.Tensor("SUM", out.astype(np.int32))])
                )
        return responses
