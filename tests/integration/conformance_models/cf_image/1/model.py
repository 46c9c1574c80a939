"""Image codec in and out."""

import numpy as np

import tritonpy as tp


class ImageModel(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB", max_pixels=1_000_000)}
    outputs = {
        "SHAPE": tp.Tensor("INT32", [3]),
        "MEAN_RGB": tp.Tensor("FP32", [3]),
        "FLIPPED": tp.Image(color="RGB", format="png"),
    }
    max_batch_size = 8

    def infer(self, IMAGE):
        return {
            "SHAPE": np.array([im.shape for im in IMAGE]),
            "MEAN_RGB": np.array([im.reshape(-1, 3).mean(axis=0) for im in IMAGE]),
            "FLIPPED": [im[:, ::-1] for im in IMAGE],
        }


TritonPythonModel = ImageModel
