"""The stream workload's ``checked`` variant (``benchmarks/run.py --checked``): stream_raw.py
plus, per token, what tritonpy's engine adds to a hand-written model's work, written out by
hand: the clocks of ``check_cancellation="auto"`` (the time spent producing each token) and the
token checked against its declared data type and shape before it becomes a tensor (the server
checks only an output's name). tritonpy / checked is then what tritonpy costs beyond the checks
it makes (its generator-of-dicts shape included: see stream_generator.py); checked / control
what the checks cost."""

import json
from time import perf_counter

import numpy as np
import triton_python_backend_utils as pb_utils

RESPONSES = 16
VOCAB = 32000
#: the "auto" policy's thresholds (tritonpy's): a client is asked after 2 ms of producing
AUTO_SECONDS = 0.002
INTERVAL_SECONDS = 0.1


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException("stream_checked must be decoupled")
        output = pb_utils.get_output_config_by_name(config, "TOKEN")
        self.token_dtype = np.dtype(pb_utils.triton_string_to_numpy(output["data_type"]))
        self.token_dims = tuple(int(d) for d in output["dims"])

    def execute(self, requests):
        dtype, dims = self.token_dtype, self.token_dims
        for request in requests:
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy()
            sender = request.get_response_sender()
            state = int(prompt.sum())
            checked_at, producing = perf_counter(), 0.0
            for _ in range(RESPONSES):
                started = perf_counter()
                state = (state * 1103515245 + 12345) % 2147483648  # the next "token"
                token = np.array([state % VOCAB], dtype=self.token_dtype)
                now = perf_counter()
                producing += now - started
                if producing >= AUTO_SECONDS or now - checked_at >= INTERVAL_SECONDS:
                    checked_at, producing = now, 0.0
                    if sender.is_cancelled():
                        break
                if type(token) is not np.ndarray or token.dtype != dtype or token.shape != dims:
                    raise pb_utils.TritonModelException("output 'TOKEN' does not fit")
                tensors = [pb_utils.Tensor("TOKEN", token)]
                sender.send(pb_utils.InferenceResponse(output_tensors=tensors))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
