"""Tells each request what its execute() held, slot by slot: for every request its
correlation id, flags, requested outputs and control values, and its VALUE when its slot is
ready (a null request's data mean nothing). Written for tritonpy's conformance tests of the
direct strategy's slots and of the idle timeout.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

CONTROLS = ("START", "END", "READY", "CORRID")


def _value(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0].item()


def _described(request):
    seen = {name: _value(request, name) for name in CONTROLS}
    if seen["READY"]:
        seen["VALUE"] = _value(request, "VALUE")
    seen["id"] = request.correlation_id()
    seen["flags"] = request.flags()
    seen["outputs"] = sorted(request.requested_output_names())
    return seen


class TritonPythonModel:
    def execute(self, requests):
        batch = json.dumps([_described(r) for r in requests]).encode()
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("BATCH", np.array([[batch]], dtype=np.object_))]
            )
            for _ in requests
        ]
