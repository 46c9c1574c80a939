"""Decode encoded images (PNG, JPEG...), resize and normalise them into N x C x H x W floats.

config.pbtxt parameters: ``size`` ("WIDTHxHEIGHT" or one number), ``color`` (RGB, BGR, GRAY),
``mean`` and ``std`` (one value per channel, or one for all, on pixels scaled to 0..1),
``reduced_decode`` ("true" by default: a JPEG at least twice the size is decoded at a reduced
size by the JPEG decoder before the resize, faster and within a few levels of the exact path;
"false" for the exact path).

Each image is decoded straight to ``size`` and normalised straight into its row of the
float32 batch (resized and normalised right after decoding, the images of one batch on a few
threads), so ``infer`` has nothing left to do.
"""

from typing import Any, Dict

import numpy as np
from numpy.typing import NDArray

import tritonpy as tp
from tritonpy.parameters import boolean, floats, size


class ImagePreprocess(tp.Model):
    # every argument names its config.pbtxt parameter: read and checked when the model loads
    inputs = {
        "IMAGE": tp.Image(
            color=tp.config_parameter("color", "RGB"),
            size=tp.config_parameter("size", (224, 224), cast=size),
            reduced_decode=tp.config_parameter("reduced_decode", True, cast=boolean),
            normalize=tp.vision.Normalize(
                mean=tp.config_parameter("mean", (0.0,), cast=floats),
                std=tp.config_parameter("std", (1.0,), cast=floats),
            ),
        )
    }
    # C, H and W follow the parameters, so they stay -1 here: ensembles accept -1 as a wildcard
    outputs = {"PIXELS": tp.Tensor("FP32", [-1, -1, -1])}
    max_batch_size = 32

    def infer(self, IMAGE: NDArray[np.float32]) -> Dict[str, Any]:
        return {"PIXELS": IMAGE}  # N x C x height x width, ready


TritonPythonModel = ImagePreprocess
