"""tritonpy.templates: finding, rendering and the digits ensemble (run on the fake pb_utils)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

import tritonpy as tp
from tritonpy import templates
from tritonpy.check import check_repository
from tritonpy.templates import (
    TemplateError,
    TemplateExistsError,
    TemplateNotFoundError,
    describe_template,
    digits_holdout,
    list_templates,
    render_classifier_ensemble,
    render_digits_ensemble,
    render_template,
    template_dir,
)
from tritonpy.testing import EnsembleHarness, ModelHarness

_NEEDS_OPENCV = "the templates' image models need OpenCV: pip install 'tritonpy[image]'"

TEMPLATES = [
    "bls_router",
    "classification_postprocess",
    "detection_postprocess",
    "ensemble_classifier",
    "image_preprocess",
    "minimal",
    "online_normalizer",
    "text_stream",
    "torch_model",
]


def read_config(model_dir: Path) -> Any:
    config = model_config_pb2.ModelConfig()
    text_format.Parse((model_dir / "config.pbtxt").read_text(), config)
    return config


def files(root: Path) -> List[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# -- finding ---------------------------------------------------------------------------------


def test_lists_the_repository_templates() -> None:
    assert list_templates() == TEMPLATES
    assert template_dir("torch_model").name == "torch_model"
    assert (template_dir("torch_model") / "1" / "model.py").is_file()


def test_unknown_template_names_the_available_ones() -> None:
    with pytest.raises(TemplateNotFoundError, match=r"'resnet'.*image_preprocess"):
        template_dir("resnet")
    with pytest.raises(TemplateNotFoundError):
        template_dir("../tritonpy")
    assert issubclass(TemplateNotFoundError, tp.ToolError)


def test_templates_env_variable_points_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mine" / "1").mkdir(parents=True)
    (tmp_path / "mine" / "config.pbtxt").write_text('name: "mine"\nbackend: "python"\n')
    (tmp_path / "not_a_template").mkdir()
    monkeypatch.setenv(templates.TEMPLATES_ENV, str(tmp_path))
    assert list_templates() == ["mine"]
    monkeypatch.setenv(templates.TEMPLATES_ENV, str(tmp_path / "missing"))
    with pytest.raises(TemplateNotFoundError, match="TRITONPY_TEMPLATES"):
        list_templates()


# -- render_template -------------------------------------------------------------------------


def test_render_renames_sets_parameters_and_keeps_other_fields(tmp_path: Path) -> None:
    original = read_config(template_dir("image_preprocess"))
    target = render_template(
        "image_preprocess",
        "gray_small",
        tmp_path / "repo",
        parameters={"size": "8x8", "color": "GRAY", "threads": 2},
    )
    assert target == tmp_path / "repo" / "gray_small"
    config = read_config(target)
    assert config.name == "gray_small"
    assert config.backend == original.backend == "python"
    assert list(config.instance_group) == list(original.instance_group)
    parameters = {k: v.string_value for k, v in config.parameters.items()}
    assert parameters == {
        "size": "8x8",
        "color": "GRAY",
        "threads": "2",
        "reduced_decode": "true",
        "mean": original.parameters["mean"].string_value,
        "std": original.parameters["std"].string_value,
    }
    assert files(target) == ["1/model.py", "config.pbtxt", "environment.yml"]


def test_rendered_model_loads_under_its_new_name(tmp_path: Path) -> None:
    target = render_template(
        "image_preprocess", "tiny", tmp_path, parameters={"size": "4x2", "color": "GRAY"}
    )
    with pytest.raises(
        tp.DeclarationError,
        match=r"tiny: input 'IMAGE' cannot be built from the config.pbtxt parameters "
        r"color='GRAY'.* mean='0.485,0.456,0.406'.*Normalize\(mean=\(0.485, 0.456, 0.406\)\): "
        r"3 values for images of 1 channel\(s\); give one value",
    ):
        ModelHarness(target)  # ImageNet's three means do not fit one gray channel
    render_template(
        "image_preprocess",
        "tiny",
        tmp_path,
        parameters={"size": "4x2", "color": "GRAY", "mean": 0, "std": 1},
        overwrite=True,
    )
    cv2 = pytest.importorskip("cv2", reason=_NEEDS_OPENCV)
    ok, png = cv2.imencode(".png", np.full((6, 6), 255, np.uint8))
    assert ok
    with ModelHarness(target) as harness:
        assert harness.name == "tiny"
        pixels = harness.infer({"IMAGE": np.array([[png.tobytes()]], dtype=object)})["PIXELS"]
    assert pixels.shape == (1, 1, 2, 4)
    np.testing.assert_allclose(pixels, 1.0)


def test_render_skips_tests_readmes_caches_and_training_scripts(tmp_path: Path) -> None:
    target = render_template("torch_model", "mlp", tmp_path)
    names = files(target)
    assert "1/model.py" in names and "environment.yml" in names
    assert not any(
        n.startswith("tests/") or "__pycache__" in n or n.endswith(("README.md", "train_digits.py"))
        for n in names
    )
    ensemble = render_template("ensemble_classifier", "ens", tmp_path)
    assert files(ensemble) == ["1/.gitkeep", "config.pbtxt"]


def test_render_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    render_template("detection_postprocess", "nms", tmp_path)
    (tmp_path / "nms" / "stale.txt").write_text("from before")
    with pytest.raises(TemplateExistsError, match=r"nms.*already exists.*overwrite=True"):
        render_template("detection_postprocess", "nms", tmp_path, parameters={"iou_threshold": 0.3})
    assert read_config(tmp_path / "nms").parameters["iou_threshold"].string_value == "0.45"

    render_template(
        "detection_postprocess", "nms", tmp_path, parameters={"iou_threshold": 0.3}, overwrite=True
    )
    assert read_config(tmp_path / "nms").parameters["iou_threshold"].string_value == "0.3"
    assert not (tmp_path / "nms" / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nms"]  # no staging left behind


def test_render_renames_ensemble_steps(tmp_path: Path) -> None:
    target = render_template(
        "ensemble_classifier",
        "pets",
        tmp_path,
        models={"digits_preprocess": "pets_pre", "digits_postprocess": "pets_post"},
    )
    config = read_config(target)
    assert config.name == "pets" and config.platform == "ensemble"
    assert [s.model_name for s in config.ensemble_scheduling.step] == [
        "pets_pre",
        "digits_classifier",
        "pets_post",
    ]
    assert dict(config.ensemble_scheduling.step[1].input_map) == {"PIXELS": "pixels"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad/name"}, "not usable as a model directory"),
        ({"name": ".hidden"}, "not usable as a model directory"),
        ({"parameters": {"top_k": True}}, "'top_k' must be a string or a number"),
        ({"parameters": {"top_k": [1]}}, "'top_k' must be a string or a number"),
        ({"models": {"digits_classifier": "x"}}, "ensemble steps use \\[\\]"),
    ],
)
def test_render_errors_say_what_to_fix(
    tmp_path: Path, kwargs: Dict[str, Any], message: str
) -> None:
    arguments: Dict[str, Any] = {"name": "post", **kwargs}
    with pytest.raises(TemplateError, match=message):
        render_template("classification_postprocess", repo=tmp_path, **arguments)
    assert list(tmp_path.iterdir()) == []


def test_unknown_ensemble_step_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match=r"\['digits_model'\].*digits_preprocess"):
        render_template("ensemble_classifier", "e", tmp_path, models={"digits_model": "m"})


# -- the digits ensemble, end to end on the fake pb_utils ------------------------------------


@pytest.mark.torch
def test_digits_ensemble_chain_classifies_held_out_digits(tmp_path: Path) -> None:
    digits = render_digits_ensemble(tmp_path, prefix="mnistish")
    assert digits.models == {
        "ensemble": "mnistish",
        "preprocess": "mnistish_preprocess",
        "classifier": "mnistish_classifier",
        "postprocess": "mnistish_postprocess",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(digits.models.values())
    ensemble = read_config(tmp_path / "mnistish")
    assert [s.model_name for s in ensemble.ensemble_scheduling.step] == [
        "mnistish_preprocess",
        "mnistish_classifier",
        "mnistish_postprocess",
    ]
    assert (tmp_path / "mnistish_classifier" / "1" / "model.pt").is_file()
    labels_file = tmp_path / "mnistish_postprocess" / "labels.txt"
    assert labels_file.read_text().split() == [str(d) for d in range(10)]
    assert digits.holdout_accuracy >= 0.9
    assert (digits.images, digits.labels) == digits_holdout()
    assert len(digits.images) == 360 and digits.images[0][:4] == b"\x89PNG"

    with (
        ModelHarness(tmp_path / digits.preprocess) as pre,
        ModelHarness(tmp_path / digits.classifier) as net,
        ModelHarness(tmp_path / digits.postprocess) as post,
    ):
        predicted: List[str] = []
        for start in range(0, len(digits.images), 32):  # the ensemble's max_batch_size
            batch = np.array([[png] for png in digits.images[start : start + 32]], dtype=object)
            pixels = pre.infer({"IMAGE": batch})["PIXELS"]
            logits = net.infer({"PIXELS": pixels})["LOGITS"]
            out = post.infer({"LOGITS": logits})
            assert out["LABELS"].shape == out["SCORES"].shape == (len(batch), 3)
            predicted += [row[0].decode() for row in out["LABELS"]]
    accuracy = np.mean([p == str(t) for p, t in zip(predicted, digits.labels)])
    assert accuracy >= 0.9
    # the served chain sees the pixels training measured on (batching may flip a near-tie)
    assert accuracy == pytest.approx(digits.holdout_accuracy, abs=0.01)


def test_digits_ensemble_refuses_existing_models_before_writing(tmp_path: Path) -> None:
    (tmp_path / "digits_postprocess").mkdir()
    with pytest.raises(TemplateExistsError, match="digits_postprocess already exists"):
        render_digits_ensemble(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["digits_postprocess"]


# -- the ensemble_classifier template with its members ---------------------------------------


def test_every_template_has_a_one_line_description() -> None:
    for name in list_templates():
        text = describe_template(name)
        assert text and "\n" not in text and text.endswith("."), name
    assert describe_template("image_preprocess").startswith("Encoded images (PNG, JPEG)")


@pytest.mark.torch
def test_classifier_ensemble_untrained_loads_and_answers(tmp_path: Path) -> None:
    rendered = render_classifier_ensemble("pets", tmp_path)
    assert rendered.models == ["pets", "pets_preprocess", "pets_classifier", "pets_postprocess"]
    assert not rendered.trained and rendered.holdout_accuracy is None
    assert rendered.weights == tmp_path / "pets_classifier" / "1" / "model.pt"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(rendered.models)  # no scratch
    cv2 = pytest.importorskip("cv2", reason=_NEEDS_OPENCV)
    png = cv2.imencode(".png", np.full((8, 8), 200, np.uint8))[1].tobytes()
    with EnsembleHarness(tmp_path, "pets") as ensemble:
        out = ensemble.infer({"IMAGE": np.array([[png], [png]], dtype=object)})
    assert out["LABELS"].shape == (2, 3)
    assert {label.decode() for label in out["LABELS"].ravel()} <= {str(d) for d in range(10)}
    assert np.allclose(out["SCORES"].sum(axis=1), out["SCORES"].sum(axis=1)[0])
    # the seeded initial weights: the same file every time
    import torch

    first = torch.load(rendered.weights, weights_only=True)
    again = render_classifier_ensemble("pets", tmp_path, overwrite=True)
    second = torch.load(again.weights, weights_only=True)
    assert first.keys() == second.keys()
    assert all(torch.equal(first[key], second[key]) for key in first)


# -- templates that bring their members: bls_router ------------------------------------------


def test_bls_router_renders_with_its_members_and_routes_to_them(tmp_path: Path) -> None:
    target = render_template("bls_router", "reviews", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "reviews",
        "reviews_long",
        "reviews_short",
    ]
    assert not (target / "members").exists()  # members are models of their own, not files of it
    config = read_config(target)
    assert config.parameters["short_model"].string_value == "reviews_short"
    assert config.parameters["long_model"].string_value == "reviews_long"
    assert config.parameters["max_short_words"].string_value == "12"
    assert read_config(tmp_path / "reviews_short").name == "reviews_short"
    assert read_config(tmp_path / "reviews_long").name == "reviews_long"
    report = check_repository(tmp_path)
    assert report.errors == [], report.render_text()
    texts = np.array([[b"nice"], [b"not bad. not slow. good. " * 3]], dtype=object)
    with ModelHarness(target) as router:
        for member in ("reviews_short", "reviews_long"):
            router.register_bls_model(member, tmp_path / member)
        out = router.infer({"TEXT": texts})
    assert out["ROUTE"].ravel().tolist() == [b"reviews_short", b"reviews_long"]
    assert out["LABEL"].ravel().tolist() == [b"positive", b"positive"]


def test_bls_router_member_names_follow_a_parameter_set_at_render(tmp_path: Path) -> None:
    target = render_template("bls_router", "r", tmp_path, parameters={"long_model": "mine"})
    config = read_config(target)
    assert config.parameters["short_model"].string_value == "r_short"
    assert config.parameters["long_model"].string_value == "mine"


def test_bls_router_refuses_an_existing_member_before_writing(tmp_path: Path) -> None:
    (tmp_path / "reviews_long").mkdir()
    with pytest.raises(TemplateExistsError, match="reviews_long already exists"):
        render_template("bls_router", "reviews", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reviews_long"]
    render_template("bls_router", "reviews", tmp_path, overwrite=True)
    assert (tmp_path / "reviews_long" / "1" / "model.py").is_file()


def test_text_stream_renders_as_a_decoupled_model(tmp_path: Path) -> None:
    target = render_template("text_stream", "reader", tmp_path, parameters={"unit": "word"})
    with ModelHarness(target) as harness:
        assert harness.decoupled
        responses = harness.infer_stream({"TEXT": "one two three"})
    assert [r["CHUNK"][0] for r in responses] == [b"one", b"two", b"three"]
    assert check_repository(tmp_path).errors == []
