"""Decode encoded images (PNG, JPEG...), resize and normalise them into N x C x H x W floats.

config.pbtxt parameters: ``size`` ("WIDTHxHEIGHT" or one number), ``color`` (RGB, BGR, GRAY),
``mean`` and ``std`` (one value per channel, or one for all, on pixels scaled to 0..1).
"""

import cv2
import numpy as np

import tritonpy as tp

COLORS = ("RGB", "BGR", "GRAY")


class ImagePreprocess(tp.Model):
    # decoded as OpenCV's native BGR; setup picks the conversion for the `color` parameter
    inputs = {"IMAGE": tp.Image(color="BGR")}
    # C, H and W follow the parameters, so they stay -1 here: ensembles accept -1 as a wildcard
    outputs = {"PIXELS": tp.Tensor("FP32", [-1, -1, -1])}
    max_batch_size = 32

    def setup(self):
        self.size = parse_size(self.model_name, self.parameter("size", "224x224"))
        self.color = self.parameter("color", "RGB").upper()
        if self.color not in COLORS:
            raise tp.DeclarationError(
                f"{self.model_name}: parameter 'color' is {self.color!r}, expected one of "
                f"{list(COLORS)}; fix it in config.pbtxt"
            )
        channels = 1 if self.color == "GRAY" else 3
        self.mean = parse_floats(self.model_name, "mean", self.parameter("mean", "0"), channels)
        self.std = parse_floats(self.model_name, "std", self.parameter("std", "1"), channels)

    def infer(self, IMAGE):
        if self.color == "GRAY":
            images = [cv2.cvtColor(im, cv2.COLOR_BGR2GRAY) for im in IMAGE]
        elif self.color == "RGB":
            images = [im[:, :, ::-1] for im in IMAGE]  # a view: no copy
        else:
            images = IMAGE
        pixels = tp.vision.to_chw_batch(images, self.size, mean=self.mean, std=self.std)
        return {"PIXELS": pixels}


def parse_size(model, text):
    try:
        width, _, height = text.lower().partition("x")
        size = (int(width), int(height or width))
    except ValueError:
        size = (0, 0)
    if min(size) < 1:
        raise tp.DeclarationError(
            f"{model}: parameter 'size' is {text!r}, expected 'WIDTHxHEIGHT' (e.g. '224x224') "
            f"or one positive number; fix it in config.pbtxt"
        )
    return size


def parse_floats(model, key, text, channels):
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (1, channels) or (key == "std" and 0.0 in values):
        count = "1 number" if channels == 1 else f"1 or {channels} comma-separated numbers"
        nonzero = " (non-zero)" if key == "std" else ""
        raise tp.DeclarationError(
            f"{model}: parameter {key!r} is {text!r}, expected {count}{nonzero} for "
            f"{channels} channel(s); fix it in config.pbtxt"
        )
    return np.array(values if len(values) == channels else values * channels, np.float32)


TritonPythonModel = ImagePreprocess
