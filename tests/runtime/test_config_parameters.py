"""Declared config parameters (``tp.config_parameter``): class attributes and codec arguments
that name a ``config.pbtxt`` key, resolved and checked at ``initialize``; the ``tritonpy.*``
keys that override the runtime knobs."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._config_parameters import (
    ConfigParameter,
    declared_parameters,
    resolve_config_parameters,
)
from tritonpy.testing import ClientCancelledError, ModelHarness


def params(**values: str) -> Dict[str, Any]:
    return {"parameters": {k.replace("__", "."): {"string_value": v} for k, v in values.items()}}


class Ranked(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 4
    top_k = tp.config_parameter("top_k", 2, cast=tp.parameters.positive_int)
    unit = tp.config_parameter("unit", "word", cast=str.lower, choices=("word", "line"))
    target = tp.config_parameter("target")  # no default: config.pbtxt must name it

    def infer(self, X: Any) -> Dict[str, Any]:
        return {"Y": -np.sort(-X, axis=1)[:, : self.top_k]}


def test_declared_attributes_read_as_their_values_on_the_instance() -> None:
    config = params(top_k="3", unit="LINE", target="other_model")
    with ModelHarness(Ranked, config=config) as harness:
        assert (harness.model.top_k, harness.model.unit) == (3, "line")
        assert harness.model.target == "other_model"
        out = harness.infer({"X": np.array([[1, 5, 2, 4]], np.float32)})
    assert out["Y"].tolist() == [[5, 4, 2]]
    # absent keys take the defaults; the class keeps its declarations
    with ModelHarness(Ranked, config=params(target="t")) as harness:
        assert (harness.model.top_k, harness.model.unit) == (2, "word")
    assert isinstance(Ranked.__dict__["top_k"], ConfigParameter)
    assert Ranked.top_k.key == "top_k"  # type: ignore[attr-defined]
    assert [name for name, _ in declared_parameters(Ranked)] == ["top_k", "unit", "target"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"top_k": "zero", "target": "t"},
            "m: parameter 'top_k' is 'zero' (Ranked.top_k): expected a positive integer; "
            "fix it in config.pbtxt",
        ),
        (
            {"unit": "page", "target": "t"},
            "m: parameter 'unit' is 'page' (Ranked.unit), expected one of ['word', 'line']",
        ),
        (
            {},
            "m: config.pbtxt has no parameter 'target' (Ranked.target); add "
            'parameters { key: "target" value { string_value: "..." } }',
        ),
    ],
)
def test_bad_or_missing_values_fail_the_load_naming_model_key_and_value(
    values: Dict[str, str], message: str
) -> None:
    with pytest.raises(tp.DeclarationError) as caught:
        ModelHarness(Ranked, name="m", config=params(**values))
    assert message in str(caught.value)


def test_a_subclass_may_replace_a_declaration_with_a_value() -> None:
    class Fixed(Ranked):
        target = "fixed"  # no longer read from config.pbtxt

    with ModelHarness(Fixed, config=params(target="ignored")) as harness:
        assert harness.model.target == "fixed" and harness.model.top_k == 2
    assert [name for name, _ in declared_parameters(Fixed)] == ["top_k", "unit"]


def test_defaults_are_checked_when_the_class_is_defined() -> None:
    with pytest.raises(tp.DeclarationError, match=r"default 'cmyk' is not one of the choices"):
        tp.config_parameter("color", "cmyk", choices=("RGB", "BGR"))
    with pytest.raises(tp.DeclarationError, match="cast must be a function"):
        tp.config_parameter("n", 1, cast="int")  # type: ignore[call-overload]
    with pytest.raises(tp.DeclarationError, match=r"Image\(color='CMYK'\)"):
        tp.Image(color=tp.config_parameter("color", "CMYK"))
    with pytest.raises(tp.DeclarationError, match="a codec argument needs a default"):
        tp.Image(color=tp.config_parameter("color"))


def test_a_declared_attribute_before_initialize_is_its_default() -> None:
    model = Ranked()
    assert model.top_k == 2
    with pytest.raises(tp.DeclarationError, match=r"Ranked.target .* read before"):
        _ = model.target


class Decoded(tp.Model):
    inputs = {
        "IMAGE": tp.Image(
            color=tp.config_parameter("color", "RGB"),
            size=tp.config_parameter("size", (4, 4), cast=tp.parameters.size),
            normalize=tp.vision.Normalize(
                mean=tp.config_parameter("mean", (0.0,), cast=tp.parameters.floats),
                std=tp.config_parameter("std", (1.0,), cast=tp.parameters.floats),
            ),
        )
    }
    outputs = {"PIXELS": tp.Tensor("FP32", [-1, -1, -1])}
    max_batch_size = 4

    def infer(self, IMAGE: Any) -> Dict[str, Any]:
        return {"PIXELS": IMAGE}


def test_codec_arguments_are_rebuilt_from_the_configuration() -> None:
    declared = Decoded.inputs["IMAGE"]
    assert isinstance(declared, tp.Image)
    assert (declared.color, declared.size) == ("RGB", (4, 4))  # built with the defaults
    config = params(color="gray", size="3x2", mean="0.5", std="0.25")
    with ModelHarness(Decoded, config=config) as harness:
        image = harness.model.inputs["IMAGE"]
        assert isinstance(image, tp.Image) and image is not declared
        assert (image.color, image.size) == ("GRAY", (3, 2))
        assert image.normalize == tp.vision.Normalize(mean=0.5, std=0.25)
    assert Decoded.inputs["IMAGE"] is declared  # the class is left as it was


def test_decoding_follows_the_configured_codec() -> None:
    cv2 = pytest.importorskip("cv2", reason="tp.Image needs OpenCV: pip install 'tritonpy[image]'")
    white = cv2.imencode(".png", np.full((6, 8, 3), 255, np.uint8))[1].tobytes()
    config = params(color="GRAY", size="3x2", mean="0.5", std="0.25")
    with ModelHarness(Decoded, config=config) as harness:
        pixels = harness.infer({"IMAGE": np.array([[white]], dtype=object)})["PIXELS"]
    assert pixels.shape == (1, 1, 2, 3)
    np.testing.assert_allclose(pixels, (1.0 - 0.5) / 0.25)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"color": "CMYK"},
            "input 'IMAGE' cannot be built from the config.pbtxt parameters color='CMYK': Image(",
        ),
        ({"size": "big"}, "parameter 'size' is 'big' (an argument of Decoded.inputs['IMAGE'])"),
        (
            {"mean": "0.1,0.2"},
            "input 'IMAGE' cannot be built from the config.pbtxt parameters mean='0.1,0.2': "
            "Normalize(mean=(0.1, 0.2)): 2 values for images of 3 channel(s)",
        ),
        ({"std": "0"}, "parameters std='0': Normalize(std=(0.0,)): a std of 0 divides by zero"),
    ],
)
def test_bad_codec_arguments_fail_the_load_naming_the_keys(
    values: Dict[str, str], message: str
) -> None:
    with pytest.raises(tp.DeclarationError) as caught:
        ModelHarness(Decoded, name="pre", config=params(**values))
    assert str(caught.value).startswith("pre: ")
    assert message in str(caught.value)


class OnDevice(tp.Model):
    inputs = {"X": tp.TorchTensor("FP32", [2], device="instance")}
    outputs = {"Y": tp.Tensor("FP32", [2])}

    def infer(self, X: Any) -> Dict[str, Any]:
        return {"Y": X}


def test_a_torch_tensor_follows_the_instance_device() -> None:
    assert OnDevice.inputs["X"].device is None  # type: ignore[attr-defined]

    class Stub:
        model_name = "m"
        model_config: Dict[str, Any] = {}
        inputs = OnDevice.inputs
        outputs = OnDevice.outputs
        instance_kind = "GPU"
        torch_device = "cuda:1"

    gpu = Stub()
    resolve_config_parameters(gpu)
    assert gpu.inputs["X"].device == "cuda:1"
    cpu = Stub()
    cpu.instance_kind = "CPU"
    resolve_config_parameters(cpu)
    assert cpu.inputs["X"].device is None  # left where Triton puts it
    assert cpu.inputs["X"] is not OnDevice.inputs["X"]


@pytest.mark.torch  # torch_threads = 2 is applied at load: it needs PyTorch
def test_runtime_knobs_are_overridden_by_tritonpy_keys() -> None:
    config = params(
        target="t",
        tritonpy__torch_threads="2",
        tritonpy__tune_malloc="off",
        tritonpy__check_cancellation="yes",
    )
    with ModelHarness(Ranked, config=config) as harness:
        model = harness.model
        assert (model.torch_threads, model.tune_malloc, model.check_cancellation) == (
            2,
            False,
            True,
        )
    assert (Ranked.torch_threads, Ranked.tune_malloc, Ranked.check_cancellation) == (
        None,
        True,
        "auto",
    )


def test_the_overridden_knobs_are_the_ones_the_model_runs_with(monkeypatch: Any) -> None:
    requests = [{"X": np.ones((1, 2), np.float32)}, {"X": np.ones((1, 2), np.float32)}]
    # "auto" checks the first batch: the cancelled request is not computed
    with ModelHarness(Ranked, config=params(target="t")) as harness:
        cancelled = harness.infer_requests(requests, cancelled=[0])[0]
        assert isinstance(cancelled, ClientCancelledError)  # what the client sees
        assert isinstance(cancelled.model_result, tp.TritonRequestError)  # the model skipped it
    never = params(target="t", tritonpy__check_cancellation="false")
    with ModelHarness(Ranked, config=never) as harness:
        cancelled = harness.infer_requests(requests, cancelled=[0])[0]
        assert isinstance(cancelled, ClientCancelledError)
        assert cancelled.model_result["Y"].tolist() == [[1, 1]]  # the model computed it

    tuned: List[bool] = []
    monkeypatch.setattr("tritonpy._runtime._malloc.tune_malloc", lambda: tuned.append(True))
    with ModelHarness(Ranked, config=params(target="t", tritonpy__tune_malloc="false")):
        assert tuned == []
    with ModelHarness(Ranked, config=params(target="t")):
        assert tuned == [True]


@pytest.mark.torch
def test_torch_threads_from_the_configuration() -> None:
    torch = pytest.importorskip("torch", reason="torch_threads sets torch's thread count")
    before = torch.get_num_threads()
    wanted = 2 if before == 1 else 1  # not what it is already
    try:
        with ModelHarness(Ranked, config=params(target="t", tritonpy__torch_threads=str(wanted))):
            assert torch.get_num_threads() == wanted
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("tritonpy.torch_threads", "default", None),
        ("tritonpy.torch_threads", "4", 4),
        ("tritonpy.check_cancellation", "AUTO", "auto"),
        ("tritonpy.check_cancellation", "false", False),
        ("tritonpy.tune_malloc", "true", True),
    ],
)
def test_knob_values(key: str, text: str, value: Any) -> None:
    class Model:
        model_name = "m"
        model_config = {"parameters": {key: {"string_value": text}}}
        inputs: Dict[str, Any] = {}
        outputs: Dict[str, Any] = {}

    model = Model()
    resolve_config_parameters(model)
    assert getattr(model, key.split(".")[1]) == value


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("tritonpy.torch_threads", "0", "expected a positive number of threads, or 'default'"),
        ("tritonpy.tune_malloc", "maybe", "expected true or false"),
        ("tritonpy.check_cancellation", "sometimes", "expected true, false or auto"),
        ("tritonpy.torch_thread", "1", "'tritonpy.torch_thread' is not a tritonpy setting"),
    ],
)
def test_bad_knobs_fail_the_load(key: str, text: str, message: str) -> None:
    with pytest.raises(tp.DeclarationError, match=message):
        ModelHarness(Ranked, config=params(target="t", **{key.replace(".", "__"): text}))


def test_the_parameter_helper_shares_the_rule() -> None:
    class Reads(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [1])}
        outputs = {"Y": tp.Tensor("FP32", [1])}

        def setup(self) -> None:
            self.k = self.parameter("k", 1, cast=tp.parameters.positive_int)

        def infer(self, X: Any) -> Dict[str, Any]:
            return {"Y": X}

    with ModelHarness(Reads, config=params(k="7")) as harness:
        assert harness.model.k == 7
    with pytest.raises(tp.DeclarationError, match="r: parameter 'k' is '-1': expected a pos"):
        ModelHarness(Reads, name="r", config=params(k="-1"))
