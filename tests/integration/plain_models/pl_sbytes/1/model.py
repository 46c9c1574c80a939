"""Builds an output from a fixed-width bytes array (numpy dtype 'S') and reports what
Tensor.as_numpy() gives back for it."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            texts = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            fixed = np.array([t + b"!" for t in texts.tolist()], dtype=np.bytes_)
            tensor = pb_utils.Tensor("OUT", fixed)
            back = tensor.as_numpy()
            kind = f"{back.dtype.kind}:{back.shape}:{back.tolist()!r}".encode()
            responses.append(
                pb_utils.InferenceResponse(
                    [tensor, pb_utils.Tensor("KIND", np.array([kind], dtype=np.object_))]
                )
            )
        return responses
