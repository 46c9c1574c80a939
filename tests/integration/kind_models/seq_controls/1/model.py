"""Describes what the sequence batcher gave each request: every input's name, dtype, shape and
values in the order ``request.inputs()`` lists them, the correlation id and the flags."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def describe(tensor):
    array = tensor.as_numpy()
    return [tensor.name(), str(array.dtype), list(array.shape), array.tolist()]


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            desc = {
                "inputs": [describe(t) for t in request.inputs()],
                "correlation_id": request.correlation_id(),
                "flags": request.flags(),
            }
            text = np.array([[json.dumps(desc).encode()]], dtype=object)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("DESC", text)]))
        return responses
