"""Stands for qa/python_models/bls_parameters: each level adds three parameters (bool, int,
str) and asks itself, through BLS, for the levels below; level 0 answers what it received.
PARAMETERS_SEEN is the raw request.parameters() text of this level (its JSON form)."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def text(name, value):
    return pb_utils.Tensor(name, np.array([value.encode()], dtype=np.object_))


class TritonPythonModel:
    def execute(self, requests):
        return [self._answer(request) for request in requests]

    def _answer(self, request):
        level = int(pb_utils.get_input_tensor_by_name(request, "NUMBER_PARAMETERS").as_numpy()[0])
        seen = request.parameters()
        received = json.loads(seen)
        if level == 0:
            aggregated = json.dumps(received)
        else:
            received.update(
                {f"bool_{level}": True, f"int_{level}": level, f"str_{level}": str(level)}
            )
            below = pb_utils.InferenceRequest(
                model_name="qa_bls_parameters",
                inputs=[pb_utils.Tensor("NUMBER_PARAMETERS", np.array([level - 1], np.uint8))],
                requested_output_names=["PARAMETERS_AGGREGATED"],
                parameters=received,
            ).exec()
            if below.has_error():
                raise pb_utils.TritonModelException(below.error().message())
            out = pb_utils.get_output_tensor_by_name(below, "PARAMETERS_AGGREGATED")
            aggregated = out.as_numpy()[0].decode()
        return pb_utils.InferenceResponse(
            [text("PARAMETERS_AGGREGATED", aggregated), text("PARAMETERS_SEEN", seen)]
        )
