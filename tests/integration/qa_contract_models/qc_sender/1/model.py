"""Stands for QA response_sender / response_sender_error (not decoupled): each request is
answered as its MODE says: 0 returned; 1 sent with the FINAL flag, None returned in its
place; 2 sent with FINAL and returned too; 3 sent without FINAL, then execute() raises;
4 a FINAL flag alone first (the sender refuses it); 5 sent twice."""

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def answer(request, value):
    batch = pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy().shape[0]
    out = pb_utils.Tensor("OUT", np.full((batch, 1), value, np.int32))
    return pb_utils.InferenceResponse([out])


class TritonPythonModel:
    def execute(self, requests):
        returned = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy().sum())
            sender = request.get_response_sender()
            if mode == 0:
                returned.append(answer(request, 100))
            elif mode == 1:
                sender.send(answer(request, 200), flags=FINAL)
                returned.append(None)
            elif mode == 2:
                sender.send(answer(request, 300), flags=FINAL)
                returned.append(answer(request, 301))
            elif mode == 3:
                sender.send(answer(request, 400))
                raise ValueError("qc_sender gave up after its first response")
            elif mode == 4:
                sender.send(flags=FINAL)
            else:
                sender.send(answer(request, 500))
                sender.send(answer(request, 501), flags=FINAL)
        return returned
