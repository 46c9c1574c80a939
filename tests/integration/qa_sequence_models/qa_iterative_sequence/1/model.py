"""A countdown run one step per execute(), as Triton's QA model ``iterative_sequence`` runs
it (this repository's own rendition; see ../../README.md).

IN says how many responses to send; each step sends one, OUT being how many remain, and
releases the request with RESCHEDULE until the last, which carries the final flag. Like the
original, the countdown is read from IN only once per model instance: it is never re-armed,
so a later request finds it spent and gets one response, OUT -1.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def _require(args, config, name, data_type):
    found = pb_utils.get_input_config_by_name(config, name) or pb_utils.get_output_config_by_name(
        config, name
    )
    if list(found["dims"]) != [1] or found["data_type"] != data_type:
        raise pb_utils.TritonModelException(
            f"model {args['model_name']}: {name} must be {data_type} [1], got "
            f"{found['data_type']} {found['dims']}"
        )


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException(
                f"model {args['model_name']} sends several responses a request: set "
                "model_transaction_policy { decoupled: true }"
            )
        _require(args, config, "IN", "TYPE_INT32")
        _require(args, config, "OUT", "TYPE_INT32")
        self.remaining = 0
        self.armed = True

    def execute(self, requests):
        for request in requests:
            if self.armed:
                self.remaining = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
                self.armed = False
            self.remaining -= 1
            response = pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", np.array([self.remaining], np.int32))]
            )
            sender = request.get_response_sender()
            if self.remaining <= 0:
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                sender.send(response)
        return None
