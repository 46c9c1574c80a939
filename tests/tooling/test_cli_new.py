"""``tritonpy new`` (templates rendered from the command line) and ``tritonpy demo --help``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonpy.check import check_repository
from tritonpy.cli import main
from tritonpy.config import load_config
from tritonpy.templates import list_templates


def test_new_renders_a_template_with_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "new",
            "thumbs",
            "--template",
            "image_preprocess",
            "--repo",
            str(tmp_path),
            "--param",
            "size=64x48",
        ]
    )
    assert status == 0
    config = load_config(tmp_path / "thumbs" / "config.pbtxt")
    assert config.name == "thumbs"
    assert config.parameters["size"].string_value == "64x48"
    assert (tmp_path / "thumbs" / "1" / "model.py").is_file()
    assert f"created {tmp_path / 'thumbs'}" in capsys.readouterr().out


def test_new_refuses_to_overwrite_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["new", "post", "--template", "classification_postprocess", "--repo", str(tmp_path)]
    assert main(args) == 0
    assert main(args) == 1
    assert "--force on the command line" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0


def test_new_lists_templates_and_explains_missing_arguments(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["new", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert {"image_preprocess", "torch_model", "ensemble_classifier"} <= set(listed)
    assert main(["new"]) == 2
    assert "new needs NAME, the new model's name" in capsys.readouterr().err


def test_bad_param_syntax_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["new", "m", "--template", "torch_model", "--repo", str(tmp_path), "--param", "x"]
    assert main(args) == 1
    assert "--param 'x': expected KEY=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_new_list_prints_each_template_with_a_one_line_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["new", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list_templates()
    described = {line.split()[0]: line.split(None, 1)[1] for line in lines}
    assert described["torch_model"].startswith("A small PyTorch MLP classifier")
    assert "members" in described["ensemble_classifier"]
    assert all(text.endswith(".") and len(text) < 120 for text in described.values())


@pytest.mark.parametrize(
    ("template", "weights_line"),
    [("image_preprocess", False), ("torch_model", True), ("detection_postprocess", False)],
)
def test_new_next_steps_name_the_model_file_and_its_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, weights_line: bool
) -> None:
    assert main(["new", "m", "--template", template, "--repo", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"next: edit {tmp_path / 'm' / '1' / 'model.py'}" in out
    assert (f"weights (a torch state_dict) at {tmp_path / 'm' / '1' / 'model.pt'}" in out) == (
        weights_line
    )
    assert f"check it: tritonpy check {tmp_path}" in out
    assert f"serve it: tritonpy serve {tmp_path}" in out


@pytest.mark.torch
def test_new_ensemble_classifier_comes_with_members_and_checks_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "clf", "--template", "ensemble_classifier", "--repo", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    members = ["clf_preprocess", "clf_classifier", "clf_postprocess"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["clf", *members])
    assert f"created the ensemble {tmp_path / 'clf'} and its members {', '.join(members)}" in out
    assert "model.py" not in out  # an ensemble has none to edit
    assert "are untrained" in out
    assert "query it: tritonpy infer clf --input IMAGE=@digit.png" in out
    assert f"train it: tritonpy new clf --template ensemble_classifier --repo {tmp_path}" in out
    assert (tmp_path / "clf_classifier" / "1" / "model.pt").is_file()
    report = check_repository(tmp_path)
    assert report.errors == [] and report.warnings == [], report.render_text()
    # against a release too: no errors (its warnings are about packing environments)
    assert check_repository(tmp_path, triton_version="24.10").errors == []
    assert [
        s.model_name
        for s in load_config(tmp_path / "clf" / "config.pbtxt").ensemble_scheduling.step
    ] == (members)


def test_new_ensemble_with_model_renames_renders_the_ensemble_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["new", "e", "--template", "ensemble_classifier", "--repo", str(tmp_path)]
    assert main([*args, "--model", "digits_classifier=mine"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["e"]
    out = capsys.readouterr().out
    assert f"next: add the models its steps run to {tmp_path}" in out
    assert "model.py" not in out


def test_new_refuses_train_and_param_where_they_do_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "m", "--template", "image_preprocess", "--repo", str(tmp_path),
                 "--train"]) == 1  # fmt: skip
    assert "--train: only the 'ensemble_classifier' template" in capsys.readouterr().err
    assert main(["new", "e", "--template", "ensemble_classifier", "--repo", str(tmp_path),
                 "--param", "top_k=2"]) == 1  # fmt: skip
    assert "--param: template 'ensemble_classifier' has no parameters" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_new_ensemble_refuses_an_existing_member_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "e_postprocess").mkdir()
    assert main(["new", "e", "--template", "ensemble_classifier", "--repo", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "e_postprocess already exists" in err and "--force on the command line" in err
    assert [p.name for p in tmp_path.iterdir()] == ["e_postprocess"]


def test_demo_help_shows_the_demo_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tritonpy demo")
    for option in ("--repo", "--protocol", "--concurrency", "--limit", "--keep"):
        assert option in out


def test_new_bls_router_comes_with_its_members_and_checks_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "reviews", "--template", "bls_router", "--repo", str(tmp_path)]) == 0
    assert f"created {tmp_path / 'reviews'} from template 'bls_router'" in capsys.readouterr().out
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["reviews", "reviews_long", "reviews_short"]
    config = load_config(tmp_path / "reviews" / "config.pbtxt")
    assert config.parameters["short_model"].string_value == "reviews_short"
    report = check_repository(tmp_path)
    assert report.errors == [], report.render_text()


def test_new_text_stream_renders_a_decoupled_model(tmp_path: Path) -> None:
    args = ["new", "reader", "--template", "text_stream", "--repo", str(tmp_path)]
    assert main([*args, "--param", "unit=word"]) == 0
    config = load_config(tmp_path / "reader" / "config.pbtxt")
    assert config.model_transaction_policy.decoupled
    assert config.parameters["unit"].string_value == "word"
    assert check_repository(tmp_path).errors == []


# -- the minimal template: what `tritonpy new NAME` renders --------------------------------


def run_pytest(where: Path) -> subprocess.CompletedProcess:
    """pytest in a fresh interpreter, in ``where``'s parent, as a user runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", where.name],
        cwd=where.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_new_without_a_template_renders_the_minimal_model_with_its_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "model_repository"
    assert main(["new", "hello", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert f"created {repo / 'hello'} from template 'minimal'" in out
    assert f"test it:  python -m pytest {repo / 'hello'}" in out
    rendered = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file())
    assert rendered == ["hello/1/model.py", "hello/config.pbtxt", "hello/test_hello.py"]
    assert load_config(repo / "hello" / "config.pbtxt").name == "hello"
    report = check_repository(repo)
    assert report.errors == [], report.errors
    tested = run_pytest(repo / "hello")
    assert tested.returncode == 0 and "3 passed" in tested.stdout, tested.stdout + tested.stderr


def test_several_minimal_models_are_tested_in_one_run(tmp_path: Path) -> None:
    repo = tmp_path / "model_repository"
    for name in ("hello", "my-model.v2"):
        assert main(["new", name, "--repo", str(repo)]) == 0
    assert (repo / "my-model.v2" / "test_my_model_v2.py").is_file()
    tested = run_pytest(repo)  # one test module name per model: no import clash
    assert tested.returncode == 0 and "6 passed" in tested.stdout, tested.stdout + tested.stderr
