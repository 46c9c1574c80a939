"""Three inputs of different shapes: a request with several wrong shows which one the server
names."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            total = sum(float(t.as_numpy().sum()) for t in request.inputs())
            out = pb_utils.Tensor("SUM", np.array([total], np.float32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
