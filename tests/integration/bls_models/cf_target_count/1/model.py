"""Decoupled BLS target (plain pb_utils): N responses 0..N-1; a negative N sends |N| parts
and then an error response."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            for i in range(abs(n)):
                part = pb_utils.Tensor("I", np.array([i], np.int32))
                sender.send(pb_utils.InferenceResponse([part]))
            if n < 0:
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError("stopped")))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
