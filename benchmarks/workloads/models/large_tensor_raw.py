"""8 MiB in, 8 MiB out (FP32 [1024, 2048] scaled and shifted), hand-written and written well:
one request's rows used in place, several requests' rows merged into one vectorised pass and
split back as views, the output computed into one new array (no temporary)."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

SCALE, SHIFT = 0.5, 0.25


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.out_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "SCALED")["data_type"]
        )

    def execute(self, requests):
        parts = [pb_utils.get_input_tensor_by_name(r, "DATA").as_numpy() for r in requests]
        data = parts[0] if len(parts) == 1 else np.concatenate(parts)
        scaled = np.multiply(data, SCALE, dtype=self.out_dtype)
        scaled += SHIFT
        responses = []
        start = 0
        for part in parts:
            stop = start + len(part)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("SCALED", scaled[start:stop])]
                )
            )
            start = stop
        return responses
