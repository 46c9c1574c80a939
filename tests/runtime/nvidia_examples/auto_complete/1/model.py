"""A model whose whole interface comes from ``auto_complete_config``.

Own rendition of the idea behind NVIDIA python_backend's ``auto_complete`` example: config.pbtxt
holds only the name and backend; inputs, outputs, max_batch_size and dynamic batching are added
here.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        inputs = [
            {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
            {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]},
        ]
        outputs = [
            {"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]},
            {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [4]},
        ]
        config = auto_complete_model_config.as_dict()
        have_inputs = {i["name"] for i in config["input"]}
        have_outputs = {o["name"] for o in config["output"]}
        for inp in inputs:
            if inp["name"] not in have_inputs:
                auto_complete_model_config.add_input(inp)
        for out in outputs:
            if out["name"] not in have_outputs:
                auto_complete_model_config.add_output(out)
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUTPUT0", (a + b).astype(np.float32)),
                        pb_utils.Tensor("OUTPUT1", (a - b).astype(np.float32)),
                    ]
                )
            )
        return responses
