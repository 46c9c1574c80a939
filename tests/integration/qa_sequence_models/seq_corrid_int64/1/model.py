"""Answers the CORRID control it got (its dtype and value) beside ``request.correlation_id()``,
for the correlation-id data types of Triton's qa/L0_sequence_corrid_batcher (one model file
for the four configurations ``seq_corrid_<type>``).
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            control = pb_utils.get_input_tensor_by_name(request, "ID").as_numpy()
            seen = [str(control.dtype), control.reshape(-1)[0].item(), request.correlation_id()]
            text = np.array([[json.dumps(seen).encode()]], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("CORRID", text)]))
        return responses
