"""Stands for QA response_sender (decoupled, on_return cases): a decoupled execute() that
returns responses, after sending (MODE 1: a part; 2: a part with the FINAL flag) or not (0)."""

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def part(value):
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([value], np.int32))])


class TritonPythonModel:
    def execute(self, requests):
        returned = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            sender = request.get_response_sender()
            if mode == 1:
                sender.send(part(10))
            elif mode == 2:
                sender.send(part(20), flags=FINAL)
            elif mode == 3:
                sender.send(part(30))
                sender.send(flags=FINAL)
                continue
            returned.append(part(99))
        return returned or None
