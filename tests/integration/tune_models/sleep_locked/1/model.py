"""Sleeps 40 ms per request holding an exclusive lock on its own model.py, shared by every
instance (each is its own process): instances take turns, so more of them cannot raise the
throughput beyond the ~1 % of each request spent outside the lock. OUT = IN."""

import fcntl
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [1]})
        auto_complete_model_config.add_output(
            {"name": "OUT", "data_type": "TYPE_FP32", "dims": [1]}
        )
        return auto_complete_model_config

    def initialize(self, args):
        self.lock = open(__file__, "rb")  # noqa: SIM115 - held for the model's life

    def execute(self, requests):
        responses = []
        for request in requests:
            fcntl.flock(self.lock, fcntl.LOCK_EX)
            try:
                time.sleep(0.04)
            finally:
                fcntl.flock(self.lock, fcntl.LOCK_UN)
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)]))
        return responses

    def finalize(self):
        self.lock.close()
