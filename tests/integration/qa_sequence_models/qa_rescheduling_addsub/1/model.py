"""Sum and difference of two inputs, where the very first request the instance sees is
rescheduled once before it is answered, as in Triton's QA model
``request_rescheduling_addsub`` (this repository's own rendition; see ../../README.md).

A rescheduled request has ``None`` in its place in execute()'s returned list; the server
runs it again in a later execute() and it is answered then.
"""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.dtypes = [
            pb_utils.triton_string_to_numpy(
                pb_utils.get_output_config_by_name(config, name)["data_type"]
            )
            for name in ("OUTPUT0", "OUTPUT1")
        ]
        self.rescheduled_one = False

    def execute(self, requests):
        answers = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if not self.rescheduled_one:
                self.rescheduled_one = True
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                answers.append(None)
                continue
            tensors = [
                pb_utils.Tensor("OUTPUT0", (a + b).astype(self.dtypes[0])),
                pb_utils.Tensor("OUTPUT1", (a - b).astype(self.dtypes[1])),
            ]
            answers.append(pb_utils.InferenceResponse(tensors))
        return answers
