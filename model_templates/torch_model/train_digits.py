"""Train the torch_model template's MLP on scikit-learn's bundled digits and write 1/model.pt.

The network sees exactly what the image_preprocess model produces in the digits ensemble: each
8x8 digit (0..16) scaled to a uint8 image (0..255, what a PNG holds), then normalised by
``tritonpy.vision.to_chw_batch`` with PREPROCESS_PARAMETERS. No download; fixed seed; a few
seconds on a CPU. ``untrained()`` writes the same network's seeded initial weights instead
(needs torch alone: what ``tritonpy new --template ensemble_classifier`` starts from).

    python train_digits.py [--out 1/model.pt]
"""

import argparse
import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

import tritonpy as tp

HERE = Path(__file__).resolve().parent
SEED = 0
HOLDOUT_FRACTION = 0.2
HIDDEN = 64
# the image_preprocess parameters the digits ensemble uses (and this training reproduces)
PREPROCESS_PARAMETERS = {"size": "8x8", "color": "GRAY", "mean": "0.5", "std": "0.5"}
LABELS = [str(digit) for digit in range(10)]


def digit_images():
    """All 1797 digits as 8x8 uint8 images (0..255) and their labels."""
    from sklearn.datasets import load_digits  # training needs scikit-learn, untrained() not

    digits = load_digits()
    images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
    return images, digits.target.astype(np.int64)


def split():
    """(train, held-out) indices: stratified, fixed seed."""
    from sklearn.model_selection import train_test_split

    _, labels = digit_images()
    return train_test_split(
        np.arange(len(labels)), test_size=HOLDOUT_FRACTION, random_state=SEED, stratify=labels
    )


def pixels(images):
    """The preprocess step: N x 1 x 8 x 8 float32, normalised like the served model does."""
    p = PREPROCESS_PARAMETERS
    width, height = (int(v) for v in p["size"].split("x"))
    mean, std = float(p["mean"]), float(p["std"])
    return tp.vision.to_chw_batch(list(images), (width, height), mean=mean, std=std)


def holdout():
    """The held-out digits as PNG bytes (what a client sends) and their labels."""
    import cv2

    images, labels = digit_images()
    _, test = split()
    pngs = [cv2.imencode(".png", images[i])[1].tobytes() for i in test]
    return pngs, labels[test].tolist()


def train(out=HERE / "1" / "model.pt", *, epochs=300, seed=SEED):
    """Train, write the state_dict to ``out`` (atomically) and return the held-out accuracy."""
    torch.manual_seed(seed)
    images, labels = digit_images()
    train_idx, test_idx = split()
    x = torch.from_numpy(pixels(images))
    y = torch.from_numpy(labels)
    net = load_build_mlp()([x[0].numel(), HIDDEN, len(LABELS)])
    optimiser = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        optimiser.zero_grad()
        loss_fn(net(x[train_idx]), y[train_idx]).backward()
        optimiser.step()
    with torch.inference_mode():
        accuracy = (net(x[test_idx]).argmax(1) == y[test_idx]).float().mean().item()
    save(net, out)
    return accuracy


def untrained(out=HERE / "1" / "model.pt", *, seed=SEED):
    """Write the network's initial (seeded, untrained) weights to ``out``: a valid model.pt
    that loads and answers, with arbitrary classes, until trained."""
    torch.manual_seed(seed)
    features = int(np.prod([1, *(int(v) for v in PREPROCESS_PARAMETERS["size"].split("x"))]))
    save(load_build_mlp()([features, HIDDEN, len(LABELS)]), out)


def save(net, out):
    """Write ``net``'s state_dict to ``out`` atomically (a reader never sees half a file)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".model.pt.")
    os.close(fd)
    try:
        torch.save(net.state_dict(), tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_build_mlp():
    """build_mlp from 1/model.py: the served architecture, defined once."""
    spec = importlib.util.spec_from_file_location("torch_model_template", HERE / "1" / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_mlp


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "1" / "model.pt")
    parser.add_argument("--epochs", type=int, default=300)
    args = parser.parse_args()
    accuracy = train(args.out, epochs=args.epochs)
    print(f"wrote {args.out}; held-out accuracy {accuracy:.3f}")
