"""Decoupled model: one response per element of IN, then a final flag.

Own rendition of the behaviour of NVIDIA python_backend's decoupled ``repeat`` example. DELAY
(optional, milliseconds per element) and WAIT (optional, milliseconds before the final flag)
only slow the stream down.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(self.model_config):
            raise pb_utils.TritonModelException(
                "model 'repeat' needs model_transaction_policy { decoupled: true }"
            )

    def execute(self, requests):
        for request in requests:
            self._stream(request)
        return None

    def _stream(self, request):
        sender = request.get_response_sender()
        values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
        delay_tensor = pb_utils.get_input_tensor_by_name(request, "DELAY")
        wait_tensor = pb_utils.get_input_tensor_by_name(request, "WAIT")
        delays = (
            delay_tensor.as_numpy()
            if delay_tensor is not None
            else np.zeros(values.shape, dtype=np.uint32)
        )
        if delays.shape != values.shape:
            sender.send(
                pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(
                        "DELAY must have as many elements as IN",
                        pb_utils.TritonError.INVALID_ARG,
                    )
                ),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
            return
        for idx, (value, delay) in enumerate(zip(values, delays)):
            if sender.is_cancelled():
                break
            if delay:
                time.sleep(int(delay) / 1000.0)
            sender.send(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                        pb_utils.Tensor("IDX", np.array([idx], dtype=np.uint32)),
                    ]
                )
            )
        if wait_tensor is not None:
            time.sleep(int(wait_tensor.as_numpy()[0]) / 1000.0)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
