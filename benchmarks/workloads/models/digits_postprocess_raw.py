"""Ensemble member, hand-written: softmax top-k with class names from labels.txt, rows of all
requests merged into one vectorised pass."""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.ids_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "CLASS_IDS")["data_type"]
        )
        self.scores_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "SCORES")["data_type"]
        )
        self.top_k = int(config["parameters"]["top_k"]["string_value"])
        with open(os.path.join(args["model_repository"], "labels.txt"), encoding="utf-8") as fh:
            names = fh.read().splitlines()
        self.labels = np.array([name.encode("utf-8") for name in names], dtype=object)

    def execute(self, requests):
        parts = [pb_utils.get_input_tensor_by_name(r, "LOGITS").as_numpy() for r in requests]
        logits = parts[0] if len(parts) == 1 else np.concatenate(parts)
        k = min(self.top_k, logits.shape[1])
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        top = np.argpartition(-probs, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(probs, top, axis=1), axis=1, kind="stable")
        ids = np.take_along_axis(top, order, axis=1)
        scores = np.take_along_axis(probs, ids, axis=1).astype(self.scores_dtype, copy=False)
        labels = self.labels[ids]
        ids = ids.astype(self.ids_dtype, copy=False)
        responses = []
        start = 0
        for part in parts:
            stop = start + len(part)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("SCORES", scores[start:stop]),
                        pb_utils.Tensor("CLASS_IDS", ids[start:stop]),
                        pb_utils.Tensor("LABELS", labels[start:stop]),
                    ]
                )
            )
            start = stop
        return responses
