"""Decoupled: from a thread started by execute(), the same response twice (INPUT0 through
DLPack, GPU_OUTPUT less its first flag), then the final flag (stands for
qa/python_models/dlpack_io_identity_decoupled on CPU, without its 5 s wait)."""

import threading

import triton_python_backend_utils as pb_utils


def answer(sender, value, flags):
    response = pb_utils.InferenceResponse(
        [
            pb_utils.Tensor.from_dlpack("OUTPUT0", value.to_dlpack()),
            pb_utils.Tensor("NEXT_GPU_OUTPUT", flags[1:]),
        ]
    )
    for _ in range(2):
        sender.send(response)
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


class TritonPythonModel:
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            flags = pb_utils.get_input_tensor_by_name(request, "GPU_OUTPUT").as_numpy()
            thread = threading.Thread(
                target=answer, args=(request.get_response_sender(), value, flags), daemon=True
            )
            self.threads.append(thread)
            thread.start()

    def finalize(self):
        for thread in self.threads:
            thread.join()
