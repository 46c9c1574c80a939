"""Logits [1000] -> softmax top-5 ids and scores, hand-written and written well: the rows of
every request merged into one vectorised softmax + argpartition, split back per request."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

TOP_K = 5


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.ids_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "IDS")["data_type"]
        )
        self.scores_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "SCORES")["data_type"]
        )

    def execute(self, requests):
        parts = [pb_utils.get_input_tensor_by_name(r, "LOGITS").as_numpy() for r in requests]
        logits = parts[0] if len(parts) == 1 else np.concatenate(parts)
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        top = np.argpartition(-probs, TOP_K - 1, axis=1)[:, :TOP_K]
        order = np.argsort(-np.take_along_axis(probs, top, axis=1), axis=1, kind="stable")
        ids = np.take_along_axis(top, order, axis=1)
        scores = np.take_along_axis(probs, ids, axis=1).astype(self.scores_dtype, copy=False)
        ids = ids.astype(self.ids_dtype, copy=False)
        responses = []
        start = 0
        for part in parts:
            stop = start + len(part)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("IDS", ids[start:stop]),
                        pb_utils.Tensor("SCORES", scores[start:stop]),
                    ]
                )
            )
            start = stop
        return responses
