"""Model.parameter and the parsers of tritonpy.parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness


def params(**values: str) -> Dict[str, Any]:
    return {"parameters": {k: {"string_value": v} for k, v in values.items()}}


class Configurable(tp.Model):
    inputs = {"IMAGE": tp.Image()}
    outputs = {"SHAPE": tp.Tensor("INT32", [3])}
    max_batch_size = 2

    def setup(self) -> None:
        self.size = self.parameter("size", (8, 8), cast=tp.parameters.size)
        self.top_k = self.parameter("top_k", 1, cast=tp.parameters.positive_int)
        color = self.parameter("color", "RGB", cast=str.upper, choices=("RGB", "GRAY"))
        self.inputs = {"IMAGE": tp.Image(color=color)}

    def infer(self, IMAGE: Any) -> Dict[str, Any]:
        return {"SHAPE": np.array([im.shape for im in IMAGE])}


def test_parameters_are_cast_and_default_when_absent() -> None:
    with ModelHarness(Configurable, config=params(size="4x2", top_k="3")) as harness:
        assert harness.model.size == (4, 2)
        assert harness.model.top_k == 3
    with ModelHarness(Configurable) as harness:
        assert harness.model.size == (8, 8) and harness.model.top_k == 1


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"size": "big"}, "parameter 'size' is 'big': expected WIDTHxHEIGHT"),
        ({"top_k": "0"}, "parameter 'top_k' is '0': expected a positive integer"),
        ({"color": "cmyk"}, "parameter 'color' is 'cmyk', expected one of ['RGB', 'GRAY']"),
    ],
)
def test_bad_parameters_fail_the_load_naming_model_and_key(
    values: Dict[str, str], message: str
) -> None:
    with pytest.raises(tp.DeclarationError) as caught:
        ModelHarness(Configurable, name="cfg", config=params(**values))
    assert str(caught.value).startswith("cfg: ")
    assert message in str(caught.value)


def test_setup_may_replace_a_codec_keeping_what_triton_sees() -> None:
    cv2 = pytest.importorskip("cv2", reason="tp.Image needs OpenCV: pip install 'tritonpy[image]'")

    png = cv2.imencode(".png", np.zeros((3, 5, 3), np.uint8))[1].tobytes()
    with ModelHarness(Configurable, config=params(color="gray")) as harness:
        out = harness.infer({"IMAGE": np.array([[png]], dtype=object)})
    assert out["SHAPE"].tolist() == [[3, 5, 1]]  # decoded as GRAY, chosen by the parameter


def test_setup_may_not_change_the_triton_signature() -> None:
    class Sneaky(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [2])}
        outputs = {"Y": tp.Tensor("FP32", [2])}

        def setup(self) -> None:
            self.inputs = {"X": tp.Tensor("FP64", [2])}

        def infer(self, X: Any) -> Dict[str, Any]:
            return {"Y": X}

    with pytest.raises(tp.DeclarationError, match=r"replaced input 'X'.*must keep the data type"):
        ModelHarness(Sneaky)


@pytest.mark.parametrize(
    ("parser", "text", "value"),
    [
        (tp.parameters.size, "224", (224, 224)),
        (tp.parameters.size, " 32X16 ", (32, 16)),
        (tp.parameters.floats, "0.5, 1,2e-1", (0.5, 1.0, 0.2)),
        (tp.parameters.positive_int, "7", 7),
        (tp.parameters.non_negative_int, "0", 0),
        (tp.parameters.fraction, "0.45", 0.45),
        (tp.parameters.fraction, "1", 1.0),
        (tp.parameters.boolean, "Yes", True),
        (tp.parameters.boolean, "off", False),
    ],
)
def test_parsers(parser: Any, text: str, value: Any) -> None:
    assert parser(text) == value


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (tp.parameters.size, "0x4"),
        (tp.parameters.floats, "a,b"),
        (tp.parameters.positive_int, "-1"),
        (tp.parameters.non_negative_int, "-1"),
        (tp.parameters.non_negative_int, "2.5"),
        (tp.parameters.fraction, "1.5"),
        (tp.parameters.fraction, "high"),
        (tp.parameters.boolean, "maybe"),
    ],
)
def test_parsers_refuse_with_value_error(parser: Any, text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parser(text)


LABELLED = """
import tritonpy as tp


class Labelled(tp.Model):
    inputs = {"LOGITS": tp.Tensor("FP32", [-1])}
    outputs = {"LABEL": tp.Text()}
    max_batch_size = 4

    def setup(self):
        self.labels = self.read_labels()
        self.weights = self.model_file("weights.bin", in_version=True, hint="run train.py")

    def infer(self, LOGITS):
        return {"LABEL": [self.labels[i] for i in LOGITS.argmax(axis=1)]}


TritonPythonModel = Labelled
"""


def labelled_model(tmp_path: Path, labels: Optional[str], weights: bool = True) -> Path:
    model = tmp_path / "labelled"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(LABELLED)
    if labels is not None:
        (model / "labels.txt").write_text(labels)
    if weights:
        (model / "1" / "weights.bin").write_bytes(b"w")
    return model


def test_model_files_and_labels_are_read_beside_the_config(tmp_path: Path) -> None:
    model = labelled_model(tmp_path, "dog\ncat\ngolden retriever\n")
    with ModelHarness(model) as harness:
        assert harness.model.labels == ["dog", "cat", "golden retriever"]
        assert harness.model.weights == model / "1" / "weights.bin"
        out = harness.infer({"LOGITS": [[0.0, 0.1, 2.0], [3.0, 0.0, 0.0]]})
    assert out["LABEL"].tolist() == [[b"golden retriever"], [b"dog"]]


@pytest.mark.parametrize(
    ("labels", "weights", "message"),
    [
        (
            None,
            True,
            "labels.txt not found; the model needs labels.txt beside config.pbtxt: one class "
            "name per line, in class-id order",
        ),
        ("", True, "labels.txt is empty; write one class name per line"),
        ("dog\n\ncat\n", True, "labels.txt line 2 is blank"),
        (
            "dog\n",
            False,
            "weights.bin not found; the model needs weights.bin in the version directory: "
            "run train.py",
        ),
    ],
)
def test_missing_or_bad_model_files_fail_the_load(
    tmp_path: Path, labels: Optional[str], weights: bool, message: str
) -> None:
    with pytest.raises(tp.DeclarationError) as caught:
        ModelHarness(labelled_model(tmp_path, labels, weights))
    assert str(caught.value).startswith("labelled: ")
    assert message in str(caught.value)


def test_torch_device_follows_the_instance_kind() -> None:
    with ModelHarness(Configurable) as harness:
        assert harness.model.torch_device == "cpu"
    with ModelHarness(Configurable, instance_kind="KIND_GPU", device_id=1) as harness:
        assert harness.model.torch_device == "cuda:1"
