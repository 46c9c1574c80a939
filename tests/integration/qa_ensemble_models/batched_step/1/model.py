"""Y = 2 X, with one answer per kind of failure, chosen by the value of X: a negative value
is an error response (default code), 9 an INVALID_ARG error response, 7 a response without
Y, above 100 an exception that fails the whole execute()."""

import numpy as np
import triton_python_backend_utils as pb_utils


def answer(x):
    if (x < 0).any():
        return pb_utils.InferenceResponse(error=pb_utils.TritonError("X must be non-negative"))
    if (x == 9).any():
        return pb_utils.InferenceResponse(
            error=pb_utils.TritonError("X = 9 is refused", pb_utils.TritonError.INVALID_ARG)
        )
    if (x == 7).any():
        return pb_utils.InferenceResponse([])
    if (x > 100).any():
        raise pb_utils.TritonModelException("X above 100")
    return pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x * 2).astype(np.float32))])


class TritonPythonModel:
    def execute(self, requests):
        return [answer(pb_utils.get_input_tensor_by_name(r, "X").as_numpy()) for r in requests]
