"""A decoupled sequence model: for each request, two responses (the running sum of its
sequence, then the sum again doubled) and the final flag apart. The sum starts at START and is
dropped at END; a request of a sequence that was never started gets an error response.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            value, start, end, corrid = (
                int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])
                for name in ("VALUE", "START", "END", "CORRID")
            )
            key = corrid
            if start:
                self.sums[key] = 0
            if key not in self.sums:
                error = pb_utils.TritonError(f"sequence {key} was never started")
                sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                continue
            self.sums[key] += value
            total = self.sums[key]
            for part in (total, 2 * total):
                out = pb_utils.Tensor("SUM", np.array([part], dtype=np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            if end:
                del self.sums[key]
            sender.send(flags=final)
        return None
