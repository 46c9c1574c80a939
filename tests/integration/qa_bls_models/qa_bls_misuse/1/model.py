"""tritonpy's own probe of how the stub builds BLS requests: InferenceRequest without a
model name, inputs or output names, with None or wrongly typed arguments, with parameters
that are not a dict of str to bool/int/str; names given as bytes; parameters as the callee
(qa_bls_parameters at level 0) sees them. Answers one line per try: the exception's type
and text (object addresses masked), or what the call gave."""

import re

import numpy as np
import triton_python_backend_utils as pb_utils

NAME = "qa_bls_parameters"
OUT = ["PARAMETERS_SEEN"]


def level0():
    return [pb_utils.Tensor("NUMBER_PARAMETERS", np.array([0], np.uint8))]


TRIES = {
    "no-arguments": lambda: pb_utils.InferenceRequest(),
    "no-model-name": lambda: pb_utils.InferenceRequest(inputs=level0(), requested_output_names=OUT),
    "no-inputs": lambda: pb_utils.InferenceRequest(model_name=NAME, requested_output_names=OUT),
    "no-output-names": lambda: pb_utils.InferenceRequest(model_name=NAME, inputs=level0()),
    "model-name-none": lambda: pb_utils.InferenceRequest(
        model_name=None, inputs=level0(), requested_output_names=OUT
    ),
    "model-name-int": lambda: pb_utils.InferenceRequest(
        model_name=7, inputs=level0(), requested_output_names=OUT
    ),
    "parameters-json-text": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=level0(), requested_output_names=OUT, parameters='{"k": 1}'
    ),
    "parameters-float": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=level0(), requested_output_names=OUT, parameters={"k": 0.5}
    ),
    "parameters-int-key": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=level0(), requested_output_names=OUT, parameters={3: "v"}
    ),
    "output-names-set": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=level0(), requested_output_names={"PARAMETERS_SEEN"}
    ),
    "output-names-tuple": lambda: seen(NAME, ("PARAMETERS_SEEN",), None),
    "inputs-not-tensors": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=[np.zeros(1, np.uint8)], requested_output_names=OUT
    ),
    "version-text": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=level0(), requested_output_names=OUT, model_version="1"
    ),
    "correlation-id-float": lambda: pb_utils.InferenceRequest(
        model_name=NAME, inputs=level0(), requested_output_names=OUT, correlation_id=1.5
    ),
    "request-id-none": lambda: pb_utils.InferenceRequest(
        request_id=None, model_name=NAME, inputs=level0(), requested_output_names=OUT
    ),
    "bytes-names": lambda: seen(b"qa_bls_parameters", [b"PARAMETERS_SEEN"], {"a": 1}),
    "parameters-seen": lambda: seen(NAME, OUT, {"z": 2, "a": "two", "m": False}),
    "no-parameters": lambda: seen(NAME, OUT, None),
}


def seen(name, outputs, parameters):
    response = pb_utils.InferenceRequest(
        model_name=name, inputs=level0(), requested_output_names=outputs, parameters=parameters
    ).exec()
    if response.has_error():
        return "error response: " + response.error().message()
    return "seen " + pb_utils.get_output_tensor_by_name(response, OUT[0]).as_numpy()[0].decode()


def attempt(build):
    try:
        got = build()
    except Exception as exc:  # the probe reports every refusal
        return re.sub(r"0x[0-9a-f]+", "0x?", f"{type(exc).__name__}: {exc}")
    return got if isinstance(got, str) else "built"


class TritonPythonModel:
    def execute(self, requests):
        lines = [f"{case} -> {attempt(build)}".encode() for case, build in TRIES.items()]
        out = pb_utils.Tensor("MESSAGES", np.array(lines, dtype=np.object_))
        return [pb_utils.InferenceResponse([out]) for _ in requests]
