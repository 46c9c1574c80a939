"""The sequence workload's ``checked`` variant (``benchmarks/run.py --checked``): sequence_raw.py
plus, per request, what tritonpy's engine adds to a hand-written model's work, written out by
hand: the model's computation timed (tritonpy times ``infer`` for ``check_cancellation="auto"``)
and each output checked against its declared data type, its request's rows and its shape before
it becomes a tensor (the server checks only an output's name). tritonpy / checked is then what
tritonpy's engine costs beyond the checks it makes; checked / control what the checks cost."""

import json
import time
from time import perf_counter

import numpy as np
import triton_python_backend_utils as pb_utils

START = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
#: Triton's default idle timeout (max_sequence_idle_microseconds), in seconds
DEFAULT_IDLE_S = 1.0


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.outputs = tuple(
            (
                name,
                np.dtype(
                    pb_utils.triton_string_to_numpy(
                        pb_utils.get_output_config_by_name(config, name)["data_type"]
                    )
                ),
                tuple(int(d) for d in pb_utils.get_output_config_by_name(config, name)["dims"]),
            )
            for name in ("SUM", "MEAN")
        )
        self.sum_dtype, self.mean_dtype = (dtype for _, dtype, _ in self.outputs)
        idle_us = config["sequence_batching"].get("max_sequence_idle_microseconds")
        self.idle_s = int(idle_us) / 1e6 if idle_us else DEFAULT_IDLE_S
        # correlation id -> [running sum, count, time of its last request]
        self.states = {}
        self.next_sweep = 0.0
        self.slowest = 0.0

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
            started = perf_counter()
            total = state[0] = state[0] + value
            count = state[1] = state[1] + 1
            values = (
                total.astype(self.sum_dtype, copy=False),
                (total / count).astype(self.mean_dtype),
            )
            elapsed = perf_counter() - started
            if elapsed > self.slowest:
                self.slowest = elapsed
            state[2] = now
            if flags & END:
                del states[corrid]
            rows = value.shape[0]
            tensors = []
            for (name, dtype, dims), out in zip(self.outputs, values):
                shape = out.shape if type(out) is np.ndarray else None
                if shape is None or out.dtype != dtype or shape[0] != rows or shape[1:] != dims:
                    raise pb_utils.TritonModelException(f"output {name!r} does not fit")
                tensors.append(pb_utils.Tensor(name, out))
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
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
