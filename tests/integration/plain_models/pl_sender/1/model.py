"""A non-decoupled model that answers through the response sender. MODE picks how; what
pb_utils raises on the way is kept, and MODE 9 returns it (one instance: state persists)."""

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def response(value):
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([value], np.int32))])


class TritonPythonModel:
    def initialize(self, args):
        self.raised = []

    def attempt(self, send, *args, **kwargs):
        try:
            send(*args, **kwargs)
        except Exception as exc:
            self.raised.append(f"{type(exc).__name__}: {exc}")

    def execute(self, requests):
        responses = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            if mode == 9:
                status = np.array([m.encode() for m in self.raised], dtype=np.object_)
                self.raised = []
                out = pb_utils.Tensor("STATUS", status)
                responses.append(pb_utils.InferenceResponse([out]))
                continue
            sender = request.get_response_sender()
            if mode == 0:  # one response with the FINAL flag
                sender.send(response(10), flags=FINAL)
            elif mode == 1:  # one response, then a flags-only FINAL
                sender.send(response(11))
                sender.send(flags=FINAL)
            elif mode == 2:  # a second response from a non-decoupled model
                sender.send(response(12))
                self.attempt(sender.send, response(13), flags=FINAL)
                self.attempt(sender.send, flags=FINAL)
            elif mode == 3:  # response=None with flags=0
                self.attempt(sender.send, None, flags=0)
                sender.send(response(14), flags=FINAL)
            elif mode == 4:  # a send after FINAL
                sender.send(response(15), flags=FINAL)
                self.attempt(sender.send, response(16), flags=FINAL)
                self.attempt(sender.send, flags=FINAL)
            responses = None if mode != 9 else responses
        return responses
