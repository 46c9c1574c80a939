"""Calls batched_ensemble by BLS with its X and answers, as JSON in MSG, what the call gave:
the outputs, or the error's code and message. X[0, 0] = 3 sends a batch of 6 instead (above
the ensemble's max_batch_size), X[0, 0] = 5 requests an output the ensemble lacks."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def call(x):
    names = ["NOPE"] if x[0, 0] == 5 else ["OUT"]
    if x[0, 0] == 3:
        x = np.ones((6, 2), np.float32)
    answer = pb_utils.InferenceRequest(
        model_name="batched_ensemble",
        inputs=[pb_utils.Tensor("IN", x)],
        requested_output_names=names,
    ).exec()
    if answer.has_error():
        return [int(answer.error().code()), answer.error().message()]
    return {t.name(): t.as_numpy().tolist() for t in answer.output_tensors()}


class TritonPythonModel:
    def execute(self, requests):
        answers = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            text = json.dumps(call(x)).encode()
            answers.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("MSG", np.array([text], dtype=object))])
            )
        return answers
