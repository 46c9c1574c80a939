"""A decoupled model streaming 16 responses per request (one token each, as a text generator
streams), hand-written the way python_backend's decoupled examples write one: a response
sender per request, one InferenceResponse per token, then a flags-only FINAL; output dtype
read once in initialize."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

RESPONSES = 16
VOCAB = 32000


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException("stream_raw must be decoupled")
        self.token_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "TOKEN")["data_type"]
        )

    def execute(self, requests):
        for request in requests:
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy()
            sender = request.get_response_sender()
            state = int(prompt.sum())
            for _ in range(RESPONSES):
                state = (state * 1103515245 + 12345) % 2147483648  # the next "token"
                token = pb_utils.Tensor("TOKEN", np.array([state % VOCAB], dtype=self.token_dtype))
                sender.send(pb_utils.InferenceResponse(output_tensors=[token]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
