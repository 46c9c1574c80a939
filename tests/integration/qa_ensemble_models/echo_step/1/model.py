"""Answers, as JSON in SEEN, what its request carried: id, parameters, correlation id, flags
and requested outputs (tritonpy's probe of what an ensemble passes on to a step)."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def seen(request):
    return {
        "id": request.request_id(),
        "parameters": json.loads(request.parameters()),
        "correlation_id": request.correlation_id(),
        "flags": request.flags(),
        "requested": sorted(request.requested_output_names()),
    }


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("SEEN", np.array([json.dumps(seen(r)).encode()], dtype=object))]
            )
            for r in requests
        ]
