"""An ablation of the stream workload, not a variant of it: stream_generator.py (the shape a
declarative streaming model has: an ``infer`` generator yielding one {name: array} dict per
token) plus, per token, what tritonpy's engine checks, written out by hand as
stream_checked.py does: the clocks of ``check_cancellation="auto"`` and each output checked
against its declared data type and shape. What tritonpy costs over it is its engine alone;
what it costs over stream_raw.py is what any checked generator-of-dicts model pays. Served
with stream_raw's configuration:

    python benchmarks/cpu_split.py --workload stream --concurrency 4 --requests 200 \
        --execute-cpu --extra gen=raw:benchmarks/workloads/models/stream_generator.py \
        --extra genchecked=raw:benchmarks/workloads/models/stream_generator_checked.py
"""

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
        outputs = []
        for output in config["output"]:
            dtype = np.dtype(pb_utils.triton_string_to_numpy(output["data_type"]))
            outputs.append((output["name"], dtype, tuple(int(d) for d in output["dims"])))
        self.outputs = tuple(outputs)

    def infer(self, PROMPT):
        state = int(PROMPT.sum())
        for _ in range(RESPONSES):
            state = (state * 1103515245 + 12345) % 2147483648
            yield {"TOKEN": np.array([state % VOCAB], dtype=np.int64)}

    def execute(self, requests):
        final, outputs = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL, self.outputs
        for request in requests:
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy()
            sender = request.get_response_sender()
            checked_at, producing = perf_counter(), 0.0
            started = perf_counter()
            for part in self.infer(prompt):
                now = perf_counter()
                producing += now - started
                if producing >= AUTO_SECONDS or now - checked_at >= INTERVAL_SECONDS:
                    checked_at, producing = now, 0.0
                    if sender.is_cancelled():
                        break
                tensors = []
                for name, dtype, dims in outputs:
                    value = part.get(name)
                    if type(value) is not np.ndarray or value.dtype != dtype or value.shape != dims:
                        raise pb_utils.TritonModelException(f"output {name!r} does not fit")
                    tensors.append(pb_utils.Tensor(name, value))
                if len(tensors) != len(part):
                    raise pb_utils.TritonModelException("infer() returned undeclared outputs")
                sender.send(pb_utils.InferenceResponse(output_tensors=tensors))
                started = perf_counter()
            sender.send(flags=final)
        return None
