"""JPEG bytes -> 224x224 normalised FP32 CHW with tritonpy: the Image codec decodes each image
straight to 224x224 (reduced-size JPEG decoding, resized right after decoding, the images of a
batch on a few threads), rows of all requests arrive merged, tp.vision.to_chw_batch normalises
straight into CHW."""

import tritonpy as tp

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class ImagePreprocess(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB", size=(224, 224))}
    outputs = {"PIXELS": tp.Tensor("FP32", [3, 224, 224])}
    max_batch_size = 16

    def infer(self, IMAGE):
        return {"PIXELS": tp.vision.to_chw_batch(IMAGE, (224, 224), mean=MEAN, std=STD)}


TritonPythonModel = ImagePreprocess
