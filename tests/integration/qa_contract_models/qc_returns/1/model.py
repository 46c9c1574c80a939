"""Stands for QA execute_return_error / wrong_return_type: execute() returns what MODE picks."""

import numpy as np
import triton_python_backend_utils as pb_utils


class Answer:
    """Not a pb_utils.InferenceResponse."""


class TritonPythonModel:
    def execute(self, requests):
        mode = int(pb_utils.get_input_tensor_by_name(requests[0], "MODE").as_numpy()[0])
        answers = [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([mode], np.int32))])
            for _ in requests
        ]
        if mode == 1:
            return tuple(answers)
        if mode == 2:
            return "not a list"
        if mode == 3:
            return answers + answers
        if mode == 4:
            return [7 for _ in requests]
        if mode == 5:
            return [Answer() for _ in requests]
        if mode == 6:
            return answers[0]
        return answers
