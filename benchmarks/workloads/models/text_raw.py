"""UTF-8 strings in; upper-cased strings and a JSON document per row out. Hand-written and
written well: one list comprehension per output, object arrays built once per request."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.config = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            try:
                texts = [item.decode("utf-8") for item in data.reshape(-1)]
            except UnicodeDecodeError as exc:
                responses.append(
                    pb_utils.InferenceResponse(
                        output_tensors=[], error=pb_utils.TritonError(f"TEXT: {exc}")
                    )
                )
                continue
            upper = np.array([t.upper().encode("utf-8") for t in texts], dtype=object)
            stats = np.array(
                [
                    json.dumps(
                        {"chars": len(t), "words": len(t.split())}, separators=(",", ":")
                    ).encode("utf-8")
                    for t in texts
                ],
                dtype=object,
            )
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("UPPER", upper.reshape(data.shape)),
                        pb_utils.Tensor("STATS", stats.reshape(data.shape)),
                    ]
                )
            )
        return responses
