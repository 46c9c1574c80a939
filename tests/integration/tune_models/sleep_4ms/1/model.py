"""Sleeps 4 ms per request and cannot batch (max_batch_size 0 by its two-line config): one
instance tops out near 250 infer/s, and each more instance adds as much while cores allow
(sleeping takes no CPU). OUT = IN."""

import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [1]})
        auto_complete_model_config.add_output(
            {"name": "OUT", "data_type": "TYPE_FP32", "dims": [1]}
        )
        return auto_complete_model_config

    def execute(self, requests):
        responses = []
        for request in requests:
            time.sleep(0.004)
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)]))
        return responses
