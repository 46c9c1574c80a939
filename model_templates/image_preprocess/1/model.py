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

from typing import Any, Dict, Tuple

import numpy as np
from numpy.typing import NDArray

import tritonpy as tp


class ImagePreprocess(tp.Model):
    inputs = {"IMAGE": tp.Image()}
    # C, H and W follow the parameters, so they stay -1 here: ensembles accept -1 as a wildcard
    outputs = {"PIXELS": tp.Tensor("FP32", [-1, -1, -1])}
    max_batch_size = 32

    def setup(self) -> None:
        color = self.parameter("color", "RGB", cast=str.upper, choices=("RGB", "BGR", "GRAY"))
        self.size: Tuple[int, int] = self.parameter("size", (224, 224), cast=tp.parameters.size)
        reduced = self.parameter("reduced_decode", True, cast=tp.parameters.boolean)
        channels = 1 if color == "GRAY" else 3
        mean: Tuple[float, ...] = self.parameter("mean", (0.0,), cast=tp.parameters.floats)
        std: Tuple[float, ...] = self.parameter("std", (1.0,), cast=tp.parameters.floats)
        for key, values in (("mean", mean), ("std", std)):
            if len(values) not in (1, channels) or (key == "std" and 0.0 in values):
                expected = "1 number" if channels == 1 else f"1 or {channels} numbers"
                raise tp.DeclarationError(
                    f"{self.model_name}: parameter {key!r} is {values}, expected {expected}"
                    f"{' (non-zero)' if key == 'std' else ''} for {color} images; fix it in "
                    f"config.pbtxt"
                )
        # decode straight into that colour order and size, normalised into the batch
        normalize = tp.vision.Normalize(mean=mean, std=std)
        self.inputs = {
            "IMAGE": tp.Image(
                color=color, size=self.size, reduced_decode=reduced, normalize=normalize
            )
        }

    def infer(self, IMAGE: NDArray[np.float32]) -> Dict[str, Any]:
        return {"PIXELS": IMAGE}  # N x C x height x width, ready


TritonPythonModel = ImagePreprocess
