"""Ensemble member, hand-written: PNG digit -> 1 x 8 x 8 FP32 in [-1, 1] (grayscale decode,
resize, (x / 255 - 0.5) / 0.5 written straight into the batch), rows of all requests merged."""

import json

import cv2
import numpy as np
import triton_python_backend_utils as pb_utils

SIZE = (8, 8)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "PIXELS")["data_type"]
        )
        self.scale = np.float32(1.0 / 255.0 / 0.5)
        self.shift = np.float32(-0.5 / 0.5)

    def execute(self, requests):
        responses = [None] * len(requests)
        images, owners = [], []
        for index, request in enumerate(requests):
            data = pb_utils.get_input_tensor_by_name(request, "IMAGE").as_numpy().reshape(-1)
            decoded = [
                cv2.imdecode(np.frombuffer(item, np.uint8), cv2.IMREAD_GRAYSCALE) for item in data
            ]
            if any(image is None for image in decoded):
                responses[index] = pb_utils.InferenceResponse(
                    output_tensors=[],
                    error=pb_utils.TritonError("IMAGE: could not decode the image"),
                )
                continue
            images.extend(
                cv2.resize(image, SIZE, interpolation=cv2.INTER_LINEAR) for image in decoded
            )
            owners.append((index, len(decoded)))
        batch = np.empty((len(images), 1, SIZE[1], SIZE[0]), self.dtype)
        for row, image in enumerate(images):
            plane = batch[row, 0]
            np.multiply(image, self.scale, out=plane, casting="unsafe")
            plane += self.shift
        start = 0
        for index, count in owners:
            pixels = pb_utils.Tensor("PIXELS", batch[start : start + count])
            responses[index] = pb_utils.InferenceResponse(output_tensors=[pixels])
            start += count
        return responses
