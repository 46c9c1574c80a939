import numpy as np
import triton_python_backend_utils as pb_utils

START = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END


class TritonPythonModel:
    """A running sum per correlation id, kept by the model itself."""

    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()
            key, flags = request.correlation_id(), request.flags()
            if flags & START:
                self.sums[key] = 0
            self.sums[key] += int(value.sum())
            total = np.full_like(value, self.sums[key])
            if flags & END:
                del self.sums[key]
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", total)]))
        return responses
