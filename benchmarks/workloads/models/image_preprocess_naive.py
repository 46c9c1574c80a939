"""JPEG bytes -> 224x224 normalised FP32 CHW, hand-written the typical naive way: one request
at a time, and the np.stack / 255 - mean / std / transpose idiom."""

import json

import cv2
import numpy as np
import triton_python_backend_utils as pb_utils

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "PIXELS")["data_type"]
        )

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IMAGE").as_numpy().reshape(-1)
            images = []
            for item in data:
                image = cv2.imdecode(np.frombuffer(item, np.uint8), cv2.IMREAD_COLOR)
                image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
                images.append(cv2.resize(image, (224, 224)))
            x = np.stack(images).astype(np.float32) / 255.0
            x = ((x - MEAN) / STD).transpose(0, 3, 1, 2)
            pixels = pb_utils.Tensor("PIXELS", np.ascontiguousarray(x, dtype=self.dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[pixels]))
        return responses
