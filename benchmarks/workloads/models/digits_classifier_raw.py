"""Ensemble member, hand-written: the digits MLP in torch, tensors in and out through DLPack,
rows of all requests concatenated into one forward pass."""

import os

import torch
import triton_python_backend_utils as pb_utils
from torch import nn
from torch.utils.dlpack import from_dlpack, to_dlpack


class TritonPythonModel:
    def initialize(self, args):
        # one intra-op thread, as the template's torch_threads = 1: idle torch threads spin
        # after each layer, CPU the server and the other stubs lose
        torch.set_num_threads(1)
        path = os.path.join(args["model_repository"], args["model_version"], "model.pt")
        state = torch.load(path, map_location="cpu", weights_only=True)
        weights = [value for key, value in state.items() if key.endswith(".weight")]
        sizes = [weights[0].shape[1]] + [w.shape[0] for w in weights]
        layers = [nn.Flatten()]
        for index, (size_in, size_out) in enumerate(zip(sizes, sizes[1:])):
            if index:
                layers.append(nn.ReLU())
            layers.append(nn.Linear(size_in, size_out))
        self.net = nn.Sequential(*layers)
        self.net.load_state_dict(state)
        self.net.eval()

    def execute(self, requests):
        parts = [
            from_dlpack(pb_utils.get_input_tensor_by_name(r, "PIXELS").to_dlpack())
            for r in requests
        ]
        pixels = parts[0] if len(parts) == 1 else torch.cat(parts)
        with torch.inference_mode():
            logits = self.net(pixels)
        responses = []
        for chunk in torch.split(logits, [len(p) for p in parts]):
            out = pb_utils.Tensor.from_dlpack("LOGITS", to_dlpack(chunk.contiguous()))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
