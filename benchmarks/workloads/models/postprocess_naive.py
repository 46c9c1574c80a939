"""Logits [1000] -> softmax top-5 ids and scores, hand-written the typical naive way: a loop
over requests and over rows, a full argsort per row."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


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
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "LOGITS").as_numpy()
            all_ids, all_scores = [], []
            for row in logits:
                exp = np.exp(row - np.max(row))
                probs = exp / np.sum(exp)
                ids = np.argsort(probs)[::-1][:5]
                all_ids.append(ids)
                all_scores.append(probs[ids])
            out_ids = pb_utils.Tensor("IDS", np.array(all_ids).astype(self.ids_dtype))
            out_scores = pb_utils.Tensor("SCORES", np.array(all_scores).astype(self.scores_dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_ids, out_scores]))
        return responses
