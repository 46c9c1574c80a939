"""An ablation of the stream workload, not a variant of it: stream_raw.py written in the shape
a declarative model has (an ``infer`` generator yielding one {name: array} dict per token,
each made into its InferenceResponse in ``execute()``, with no checks). What it costs over
stream_raw is what any generator-of-dicts model pays; what tritonpy costs over it is its
engine's. Served with stream_raw's configuration:

    python benchmarks/cpu_split.py --workload stream --concurrency 4 --requests 200 \
        --execute-cpu --extra gen=raw:benchmarks/workloads/models/stream_generator.py
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

RESPONSES = 16
VOCAB = 32000


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.token_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "TOKEN")["data_type"]
        )

    def infer(self, PROMPT):
        state = int(PROMPT.sum())
        for _ in range(RESPONSES):
            state = (state * 1103515245 + 12345) % 2147483648
            yield {"TOKEN": np.array([state % VOCAB], dtype=np.int64)}

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy()
            sender = request.get_response_sender()
            for part in self.infer(prompt):
                tensors = [pb_utils.Tensor(name, value) for name, value in part.items()]
                sender.send(pb_utils.InferenceResponse(output_tensors=tensors))
            sender.send(flags=final)
        return None
