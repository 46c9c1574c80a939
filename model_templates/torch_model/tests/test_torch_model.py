"""The torch_model template under the fake pb_utils, with weights trained in a temporary copy."""

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness

torch = pytest.importorskip(
    "torch", reason="this template is a torch model: pip install 'tritonpy[torch]'"
)

TEMPLATE = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.torch


def load_trainer():
    spec = importlib.util.spec_from_file_location(
        "torch_model_trainer", TEMPLATE / "train_digits.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A copy of the template with freshly trained weights, and the trainer module."""
    model_dir = tmp_path_factory.mktemp("torch") / "torch_model"
    shutil.copytree(TEMPLATE / "1", model_dir / "1", ignore=shutil.ignore_patterns("model.pt"))
    shutil.copy(TEMPLATE / "config.pbtxt", model_dir)
    trainer = load_trainer()
    accuracy = trainer.train(model_dir / "1" / "model.pt", epochs=150)
    return model_dir, trainer, accuracy


def test_trained_weights_classify_held_out_digits(trained):
    model_dir, trainer, accuracy = trained
    assert accuracy >= 0.9
    images, labels = trainer.digit_images()
    _, test = trainer.split()
    with ModelHarness(model_dir) as harness:
        assert harness.config["input"][0]["dims"] == [1, 8, 8]
        assert harness.config["max_batch_size"] == 64
        logits = np.concatenate(
            [
                harness.infer({"PIXELS": trainer.pixels(images[chunk])})["LOGITS"]
                for chunk in np.array_split(test, 6)  # 60 rows each, within max_batch_size
            ]
        )
    assert logits.shape == (len(test), 10) and logits.dtype == np.float32
    served = float((logits.argmax(1) == labels[test]).mean())
    assert served == pytest.approx(accuracy, abs=0.01)  # batching may flip a near-tie


def test_tiny_random_weights_and_merged_requests(tmp_path):
    model_dir = tmp_path / "mlp"
    shutil.copytree(TEMPLATE / "1", model_dir / "1", ignore=shutil.ignore_patterns("model.pt"))
    torch.manual_seed(1)
    net = load_trainer().load_build_mlp()([64, 5, 3])
    torch.save(net.state_dict(), model_dir / "1" / "model.pt")
    x = torch.randn(5, 1, 8, 8)
    with torch.no_grad():
        expected = net(x).numpy()
    with ModelHarness(model_dir, config=(TEMPLATE / "config.pbtxt").read_text(), name="mlp") as h:
        results = h.infer_requests([{"PIXELS": x[:2].numpy()}, {"PIXELS": x[2:].numpy()}])
        assert h.execute_calls == 1
        bad = h.infer_requests([{"PIXELS": np.zeros((1, 1, 4, 4), np.float32)}])[0]
    np.testing.assert_allclose(results[0]["LOGITS"], expected[:2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[1]["LOGITS"], expected[2:], rtol=1e-5, atol=1e-6)
    assert isinstance(bad, tp.TritonRequestError) and bad.code == "INVALID_ARG"


def test_missing_or_mismatched_weights_fail_the_load(tmp_path):
    model_dir = tmp_path / "torch_model"
    shutil.copytree(TEMPLATE / "1", model_dir / "1", ignore=shutil.ignore_patterns("model.pt"))
    with pytest.raises(tp.DeclarationError, match=r"train_digits\.py"):
        ModelHarness(model_dir)
    wrong = load_trainer().load_build_mlp()([16, 4, 2])
    torch.save(wrong.state_dict(), model_dir / "1" / "model.pt")
    with pytest.raises(tp.DeclarationError, match="expects 16 input features"):
        ModelHarness(model_dir)
