"""An accumulator driven by the START and READY controls, as Triton's QA sequence models are
(this repository's own rendition; see ../../README.md).

Without batching it keeps ONE running total for the whole instance, not one per
correlation id: START sets it to the input, a ready request adds the input, and each request
answers the total. That works on the server only because the sequence batcher gives each
sequence a slot of its own, one slot per instance. With batching (the same file serves
``qa_sequence_int32``) it keeps nothing: a ready slot answers the input plus its START
control, a slot that is not ready answers 0.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def _control(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().astype(np.int32)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.batching = int(config["max_batch_size"]) > 0
        output = pb_utils.get_output_config_by_name(config, "OUTPUT")
        self.output_dtype = pb_utils.triton_string_to_numpy(output["data_type"])
        self.total = np.zeros(1)

    def _answer(self, value, start, ready):
        if self.batching:
            return np.where(ready == 1, value + start, np.zeros_like(value))
        restarted = np.where(start == 1, value, self.total + value)
        self.total = np.where(ready == 1, restarted, self.total)
        return self.total

    def execute(self, requests):
        responses = []
        for request in requests:
            value = _control(request, "INPUT")
            answer = self._answer(value, _control(request, "START"), _control(request, "READY"))
            tensor = pb_utils.Tensor("OUTPUT", answer.astype(self.output_dtype))
            responses.append(pb_utils.InferenceResponse([tensor]))
        return responses
