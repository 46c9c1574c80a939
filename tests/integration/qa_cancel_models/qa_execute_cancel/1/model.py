"""Works for EXECUTE_DELAY seconds in steps of 0.2 s, asking after each step whether its client
cancelled; a cancelled request gets a CANCELLED error response (which the client, having
cancelled, never receives), a finished one the number of steps it polled."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

STEP_S = 0.2


class TritonPythonModel:
    def execute(self, requests):
        return [self._work(request) for request in requests]

    def _work(self, request):
        delay = float(pb_utils.get_input_tensor_by_name(request, "EXECUTE_DELAY").as_numpy()[0][0])
        polls = 0
        while polls * STEP_S < delay:
            time.sleep(STEP_S)
            polls += 1
            if request.is_cancelled():
                pb_utils.Logger.log_info(f"[qa_execute_cancel] cancel seen at poll {polls}")
                error = pb_utils.TritonError(
                    "work stopped: cancelled", pb_utils.TritonError.CANCELLED
                )
                return pb_utils.InferenceResponse(error=error)
        out = pb_utils.Tensor("POLLS", np.array([[polls]], np.int32))
        return pb_utils.InferenceResponse([out])
