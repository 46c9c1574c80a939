"""Imports its sibling module relatively (as a package member) and absolutely."""

import helpers as absolute_helpers
import numpy as np
import triton_python_backend_utils as pb_utils

from .helpers import double


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            # the module's own name tells how the stub imported it ("1.model")
            module = np.array([__name__.rsplit(".", 1)[-1].encode()], dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("REL", double(x).astype(np.int32)),
                        pb_utils.Tensor("ABS", absolute_helpers.triple(x).astype(np.int32)),
                        pb_utils.Tensor("MODULE", module),
                    ]
                )
            )
        return responses
