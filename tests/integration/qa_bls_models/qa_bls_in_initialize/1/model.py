"""Stands for qa/python_models/bls_init_error: a decoupled BLS call from initialize(),
which the stub refuses, so the model does not load."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        pb_utils.InferenceRequest(
            model_name="qa_final_data",
            inputs=[pb_utils.Tensor("WAIT_SECONDS", np.zeros((1, 1), np.float32))],
            requested_output_names=["DUMMY_OUT"],
        ).exec(decoupled=True)

    def execute(self, requests):
        return None
