"""``tritonpy new``: templates rendered from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonpy.cli import main
from tritonpy.config import load_config


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
    assert main(["new", "x"]) == 2
    assert "needs NAME and --template" in capsys.readouterr().err


def test_bad_param_syntax_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["new", "m", "--template", "torch_model", "--repo", str(tmp_path), "--param", "x"]
    assert main(args) == 1
    assert "--param 'x': expected KEY=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
