"""A running sum and mean per sequence (the sequence batcher's oldest strategy), hand-written
and written well: the state of each sequence in a dict keyed by ``request.correlation_id()``,
START and END read from ``request.flags()`` as the bitmask it is (a one-request sequence
carries both), the state freed after its END request and, since Triton calls no Python hook
when a sequence times out, swept by the model itself once a second after the configured
``max_sequence_idle_microseconds`` without a request. Output dtypes are read once in
``initialize``."""

import json
import time

import triton_python_backend_utils as pb_utils

START = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
#: Triton's default idle timeout (max_sequence_idle_microseconds), in seconds
DEFAULT_IDLE_S = 1.0


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.sum_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "SUM")["data_type"]
        )
        self.mean_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "MEAN")["data_type"]
        )
        idle_us = config["sequence_batching"].get("max_sequence_idle_microseconds")
        self.idle_s = int(idle_us) / 1e6 if idle_us else DEFAULT_IDLE_S
        # correlation id -> [running sum, count, time of its last request]
        self.states = {}
        self.next_sweep = 0.0

    def execute(self, requests):
        now = time.monotonic()
        if now >= self.next_sweep:
            self._evict_idle(now)
        states = self.states
        responses = []
        for request in requests:
            corrid, flags = request.correlation_id(), request.flags()
            if flags & START:
                state = states[corrid] = [0.0, 0, now]
            else:
                state = states.get(corrid)
                if state is None:
                    responses.append(self._unknown(corrid))
                    continue
            value = pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()
            total = state[0] = state[0] + value
            count = state[1] = state[1] + 1
            state[2] = now
            if flags & END:
                del states[corrid]
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("SUM", total.astype(self.sum_dtype, copy=False)),
                        pb_utils.Tensor("MEAN", (total / count).astype(self.mean_dtype)),
                    ]
                )
            )
        return responses

    def _evict_idle(self, now):
        idle = [k for k, state in self.states.items() if now - state[2] > self.idle_s]
        for corrid in idle:
            del self.states[corrid]
        self.next_sweep = now + min(1.0, self.idle_s)

    def _unknown(self, corrid):
        return pb_utils.InferenceResponse(
            error=pb_utils.TritonError(
                f"sequence {corrid}: no state (its first request must carry START)",
                pb_utils.TritonError.INVALID_ARG,
            )
        )
