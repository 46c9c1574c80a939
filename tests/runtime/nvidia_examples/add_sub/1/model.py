"""Element-wise sum and difference of two FP32 vectors, in the classic pb_utils style.

A from-scratch rendition of the shape of NVIDIA python_backend's ``add_sub`` example.
"""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])
        self.out_dtypes = {}
        for name in ("OUTPUT0", "OUTPUT1"):
            cfg = pb_utils.get_output_config_by_name(self.model_config, name)
            self.out_dtypes[name] = pb_utils.triton_string_to_numpy(cfg["data_type"])
        self.initialized_with = dict(args)
        self.finalized = False

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            total = pb_utils.Tensor("OUTPUT0", (a + b).astype(self.out_dtypes["OUTPUT0"]))
            diff = pb_utils.Tensor("OUTPUT1", (a - b).astype(self.out_dtypes["OUTPUT1"]))
            responses.append(pb_utils.InferenceResponse(output_tensors=[total, diff]))
        return responses

    def finalize(self):
        self.finalized = True
