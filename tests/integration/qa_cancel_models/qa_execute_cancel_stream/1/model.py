"""Decoupled: for each of STEPS steps asks its response sender whether the client cancelled,
then sends the step's number and works 0.3 s; once cancelled it sends a CANCELLED error and
the final flag (neither reaches a client that cancelled)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

STEP_S = 0.3


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            self._stream(request)
        return None

    def _stream(self, request):
        sender = request.get_response_sender()
        steps = int(pb_utils.get_input_tensor_by_name(request, "STEPS").as_numpy()[0][0])
        for step in range(steps):
            if sender.is_cancelled():
                pb_utils.Logger.log_info(f"[qa_execute_cancel_stream] cancel seen at step {step}")
                error = pb_utils.TritonError(
                    "stream stopped: cancelled", pb_utils.TritonError.CANCELLED
                )
                sender.send(pb_utils.InferenceResponse(error=error))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return
            out = pb_utils.Tensor("STEP", np.array([[step]], np.int32))
            sender.send(pb_utils.InferenceResponse([out]))
            time.sleep(STEP_S)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
