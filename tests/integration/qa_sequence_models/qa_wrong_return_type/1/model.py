"""A contract breach, as Triton's QA model ``wrong_return_type`` commits it (this
repository's own rendition; see ../../README.md): every request is released with RESCHEDULE
and yet answered in execute()'s returned list, where the stub expects None.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        answers = []
        for request in requests:
            echoed = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            answers.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", echoed)]))
        return answers
