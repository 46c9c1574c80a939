"""A decoupled model sending COUNT responses (OUT = 0, 1, ...). MODE: 0 the FINAL flag on the
last response; 1 a flags-only FINAL after them; 2 an error response (FINAL) after them; 3 after
each response, wait until the client cancels (at most 10 s), then stop with a flags-only FINAL;
4 no response at all, only a flags-only FINAL."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def response(value):
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([value], np.int32))])


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            sender = request.get_response_sender()
            if mode == 4:
                sender.send(flags=FINAL)
                continue
            for index in range(count):
                last = index == count - 1
                sender.send(response(index), flags=FINAL if mode == 0 and last else 0)
                if mode == 3:
                    deadline = time.monotonic() + 10
                    while not sender.is_cancelled() and time.monotonic() < deadline:
                        time.sleep(0.01)
                    if sender.is_cancelled():
                        break
            if mode == 2:
                error = pb_utils.TritonError(f"stopped after {count}")
                sender.send(pb_utils.InferenceResponse(error=error), flags=FINAL)
            elif mode != 0 or count == 0:
                sender.send(flags=FINAL)
        return None
