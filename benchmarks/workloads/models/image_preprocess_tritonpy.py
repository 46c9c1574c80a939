"""JPEG bytes -> 224x224 normalised FP32 CHW with tritonpy: the Image codec decodes each image
straight to 224x224 (reduced-size JPEG decoding, resized right after decoding) and normalises
it straight into its row of the batch, the images of a batch on a few threads; infer() has
nothing left to do."""

import tritonpy as tp

IMAGENET = tp.vision.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))


class ImagePreprocess(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB", size=(224, 224), normalize=IMAGENET)}
    outputs = {"PIXELS": tp.Tensor("FP32", [3, 224, 224])}
    max_batch_size = 16

    def infer(self, IMAGE):
        return {"PIXELS": IMAGE}


TritonPythonModel = ImagePreprocess
