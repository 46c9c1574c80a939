"""A small PyTorch MLP classifier; tensors go in and out through DLPack (no copies).

Weights: ``model.pt`` in this version directory, a ``state_dict`` of :func:`build_mlp` (layer
sizes are read from it). ``train_digits.py`` beside config.pbtxt writes one.
"""

import math
from typing import Any, Dict, List, Sequence

import torch
from torch import nn

import tritonpy as tp


def build_mlp(sizes: Sequence[int]) -> nn.Sequential:
    """Flatten, then Linear layers of the given sizes with ReLU between them."""
    layers: List[nn.Module] = [nn.Flatten()]
    for index, (size_in, size_out) in enumerate(zip(sizes, sizes[1:])):
        if index:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(size_in, size_out))
    return nn.Sequential(*layers)


class TorchClassifier(tp.Model):
    # C x H x W from the preprocess; on a GPU instance the codec moves them to its GPU
    inputs = {"PIXELS": tp.TorchTensor("FP32", [1, 8, 8], device="instance")}
    outputs = {"LOGITS": tp.TorchTensor("FP32", [-1])}  # one score per class
    max_batch_size = 64
    # a small model: torch's idle threads would spin after each layer, CPU the server and the
    # other stubs lose (docs/models.md); raise it for a large model alone on a machine
    torch_threads = 1

    def setup(self) -> None:
        path = self.model_file("model.pt", in_version=True, hint="python train_digits.py writes it")
        state = torch.load(path, map_location="cpu", weights_only=True)
        weights = [value for key, value in state.items() if key.endswith(".weight")]
        sizes = [weights[0].shape[1]] + [w.shape[0] for w in weights]
        features = math.prod(self.inputs["PIXELS"].dims)
        if sizes[0] != features:
            raise tp.DeclarationError(
                f"{self.model_name}: {path} expects {sizes[0]} input features, but PIXELS "
                f"declares {list(self.inputs['PIXELS'].dims)} = {features}; retrain or fix "
                f"the declaration"
            )
        self.net = build_mlp(sizes)
        self.net.load_state_dict(state)
        self.net.to(self.torch_device).eval()

    def infer(self, PIXELS: torch.Tensor) -> Dict[str, Any]:
        with torch.inference_mode():
            return {"LOGITS": self.net(PIXELS)}


TritonPythonModel = TorchClassifier
