"""INPUT0 passed on through DLPack, GPU_OUTPUT less its first flag; every model but the
first also sends INPUT0 to io_identity_1 by BLS and requires the same tensor back (stands for
qa/python_models/dlpack_io_identity, CPU only: the flags are False)."""

import numpy as np
import triton_python_backend_utils as pb_utils

FIRST = "io_identity_1"


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_name"]

    def execute(self, requests):
        answers = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            flags = pb_utils.get_input_tensor_by_name(request, "GPU_OUTPUT")
            same = pb_utils.Tensor.from_dlpack("OUTPUT0", value.to_dlpack())
            rest = pb_utils.Tensor("NEXT_GPU_OUTPUT", flags.as_numpy()[1:])
            if self.name != FIRST:
                echoed = pb_utils.InferenceRequest(
                    model_name=FIRST, inputs=[value, flags], requested_output_names=["OUTPUT0"]
                ).exec()
                if echoed.has_error():
                    raise pb_utils.TritonModelException(echoed.error().message())
                back = pb_utils.get_output_tensor_by_name(echoed, "OUTPUT0").as_numpy()
                if not np.allclose(back, value.as_numpy()):
                    raise pb_utils.TritonModelException(f"{self.name}: BLS echo differs")
            answers.append(pb_utils.InferenceResponse([same, rest]))
        return answers
