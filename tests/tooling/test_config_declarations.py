"""config.pbtxt from the declarations: sync_config, the merge rules, stability, the CLI."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from pathlib import Path

import pytest

from tritonpy.config import load_config
from tritonpy.config._cli import add_parser
from tritonpy.config._declarations import ModelNameError, NotDerivableError, sync_config
from tritonpy.config._loader import ModelImportError, defines_triton_python_model, load_model_class

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "model_templates"

DOUBLE = textwrap.dedent(
    """\
    import tritonpy as tp


    class Double(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [-1, 4]), "W": tp.Tensor("FP32", [1], default=1.0)}
        outputs = {"Y": tp.Tensor("FP32", [-1, 4])}
        max_batch_size = 8

        def infer(self, X, W):
            return {"Y": X * 2}


    TritonPythonModel = Double
    """
)

HAND_WRITTEN = textwrap.dedent(
    """\
    # tuned by hand
    name: "double"
    backend: "python"
    max_batch_size: 4
    input { name: "X" data_type: TYPE_FP32 dims: [ 16, 4 ] }
    input { name: "OLD" data_type: TYPE_INT32 dims: [ 1 ] }
    output { name: "Y" data_type: TYPE_INT8 dims: [ 3 ] label_filename: "labels.txt" }
    instance_group { kind: KIND_CPU count: 2 }
    dynamic_batching { max_queue_delay_microseconds: 500 }
    parameters { key: "top_k" value { string_value: "5" } }
    """
)

EXPECTED = textwrap.dedent(
    """\
    name: "double"
    max_batch_size: 4
    input {
      name: "X"
      data_type: TYPE_FP32
      dims: 16
      dims: 4
    }
    input {
      name: "W"
      data_type: TYPE_FP32
      dims: 1
      optional: true
    }
    output {
      name: "Y"
      data_type: TYPE_FP32
      dims: -1
      dims: 4
      label_filename: "labels.txt"
    }
    instance_group {
      count: 2
      kind: KIND_CPU
    }
    dynamic_batching {
      max_queue_delay_microseconds: 500
    }
    parameters {
      key: "top_k"
      value {
        string_value: "5"
      }
    }
    backend: "python"
    """
)


def make_model(root: Path, source: str = DOUBLE, config: str | None = HAND_WRITTEN) -> Path:
    model_dir = root / "double"
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / "model.py").write_text(source)
    if config is not None:
        (model_dir / "config.pbtxt").write_text(config)
    return model_dir


def test_merge_keeps_hand_set_fields_and_takes_declared_ones(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path)
    result = sync_config(model_dir)
    assert result.written and result.changed
    assert (model_dir / "config.pbtxt").read_text() == EXPECTED
    # re-running changes nothing, and the file is not rewritten
    again = sync_config(model_dir)
    assert not again.changed and not again.written and again.diff == ""


def test_check_reports_a_unified_diff_without_writing(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path)
    before = (model_dir / "config.pbtxt").read_text()
    result = sync_config(model_dir, check=True)
    assert result.changed and not result.written
    assert (model_dir / "config.pbtxt").read_text() == before
    diff = result.diff.splitlines()
    assert diff[0] == f"--- {model_dir / 'config.pbtxt'} (now)"
    assert diff[1] == f"+++ {model_dir / 'config.pbtxt'} (from the declarations)"
    assert '-  name: "OLD"' in diff
    assert "-  data_type: TYPE_INT8" in diff
    assert "+  optional: true" in diff


def test_a_missing_config_is_created_from_the_declarations(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path, config=None)
    result = sync_config(model_dir)
    assert result.before == "" and result.written
    config = load_config(model_dir / "config.pbtxt")
    assert config.name == "double" and config.backend == "python"
    assert config.max_batch_size == 8
    assert config.HasField("dynamic_batching")
    assert [i.name for i in config.input] == ["X", "W"]
    assert [list(i.dims) for i in config.input] == [[-1, 4], [1]]


def test_a_matching_config_keeps_its_comments(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path)
    sync_config(model_dir)
    text = "# my notes\n" + (model_dir / "config.pbtxt").read_text()
    (model_dir / "config.pbtxt").write_text(text)
    assert not sync_config(model_dir).written
    assert (model_dir / "config.pbtxt").read_text() == text


def test_unbatched_declaration_removes_batching_and_decoupled_is_declared(tmp_path: Path) -> None:
    source = DOUBLE.replace(
        "max_batch_size = 8", "max_batch_size = 0\n    decoupled = True"
    ).replace("[-1, 4]", "[4]")
    model_dir = make_model(tmp_path, source)
    sync_config(model_dir)
    config = load_config(model_dir / "config.pbtxt")
    assert config.max_batch_size == 0
    assert not config.HasField("dynamic_batching")
    assert config.model_transaction_policy.decoupled is True
    assert list(config.input[0].dims) == [4]


def test_plain_models_and_ensembles_cannot_be_derived(tmp_path: Path) -> None:
    plain = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"
    model_dir = make_model(tmp_path, plain)
    with pytest.raises(NotDerivableError, match="plain Python-backend model, not a tritonpy"):
        sync_config(model_dir)
    ensemble = tmp_path / "ens"
    (ensemble / "1").mkdir(parents=True)
    (ensemble / "config.pbtxt").write_text('name: "ens"\nplatform: "ensemble"\n')
    with pytest.raises(NotDerivableError, match="is an ensemble"):
        sync_config(ensemble)


def test_check_accepts_hand_written_configs_and_write_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository-wide ``config --check`` stays green on ensembles and plain models (their
    file is the source of truth); writing one is refused, saying why."""
    from tritonpy.cli import main

    plain = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"
    model_dir = make_model(tmp_path, plain)
    ensemble = tmp_path / "ens"
    (ensemble / "1").mkdir(parents=True)
    (ensemble / "config.pbtxt").write_text('name: "ens"\nplatform: "ensemble"\n')
    for directory, kind in ((model_dir, "a plain Python-backend model"), (ensemble, "an ensemble")):
        capsys.readouterr()
        assert main(["config", "--check", str(directory)]) == 0
        assert f"written by hand ({kind})" in capsys.readouterr().out
    assert main(["config", str(model_dir)]) == 1
    assert "cannot be derived" in capsys.readouterr().err


def test_a_model_with_its_own_environment_is_sent_to_check(tmp_path: Path) -> None:
    """model.py imports a package only its own environment has: config cannot import it in
    this Python, and says which command imports it inside the environment."""
    model_dir = make_model(tmp_path, "import no_such_module_for_tritonpy\n")
    with pytest.raises(ModelImportError) as plain:
        sync_config(model_dir, check=True)
    assert "own environment" not in str(plain.value)
    (model_dir / "requirements.txt").write_text("no-such-module-for-tritonpy\n")
    with pytest.raises(ModelImportError) as own:
        sync_config(model_dir, check=True)
    assert f"run 'tritonpy check {tmp_path}'" in str(own.value)
    assert isinstance(own.value.cause, ModuleNotFoundError)


def test_import_errors_name_the_file(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path, "import no_such_module_for_tritonpy\n")
    with pytest.raises(ModelImportError, match=r"model\.py: importing it failed: "):
        load_model_class(model_dir)


def test_defines_triton_python_model_reads_the_syntax_tree() -> None:
    assert defines_triton_python_model("class TritonPythonModel:\n    pass\n")
    assert defines_triton_python_model("from mine import Model as TritonPythonModel\n")
    assert defines_triton_python_model("if True:\n    TritonPythonModel = int\n")
    assert not defines_triton_python_model("def f():\n    TritonPythonModel = 1\n")
    assert not defines_triton_python_model("x = TritonPythonModel\n")
    with pytest.raises(SyntaxError):
        defines_triton_python_model("def (:\n")


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["config", *argv])
    result: int = args.func(args)
    return result


def test_cli_check_then_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = make_model(tmp_path)
    assert _cli(str(model_dir), "--check") == 1
    captured = capsys.readouterr()
    assert (
        captured.out.startswith(f"--- {model_dir}")
        and "contradicts the declarations" in captured.err
    )
    assert _cli(str(model_dir)) == 0
    assert capsys.readouterr().out.strip().endswith("config.pbtxt: written")
    assert _cli(str(model_dir), "--check") == 0
    assert capsys.readouterr().out.strip().endswith("config.pbtxt: up to date")
    plain = make_model(tmp_path / "plain", "class TritonPythonModel:\n    pass\n")
    assert _cli(str(plain)) == 1
    assert "cannot be derived" in capsys.readouterr().err


@pytest.mark.parametrize(
    "template",
    [
        "image_preprocess",
        "classification_postprocess",
        "detection_postprocess",
        "torch_model",
        "bls_router",
    ],
)
def test_template_configs_round_trip(template: str, tmp_path: Path) -> None:
    model_dir = tmp_path / template
    shutil.copytree(TEMPLATES / template, model_dir)
    original = load_config(TEMPLATES / template / "config.pbtxt")
    sync_config(model_dir)
    written = (model_dir / "config.pbtxt").read_text()
    assert not sync_config(model_dir, check=True).changed
    assert not sync_config(model_dir).written
    assert (model_dir / "config.pbtxt").read_text() == written
    config = load_config(model_dir / "config.pbtxt")
    # hand-set fields survive
    assert list(config.instance_group) == list(original.instance_group)
    assert dict(config.parameters) == dict(original.parameters)
    assert config.input and config.output and config.max_batch_size > 0


def test_write_config_keeps_the_file_readable_by_the_server(tmp_path: Path) -> None:
    from tritonpy.config import parse_config, write_config

    fresh = write_config(tmp_path / "config.pbtxt", parse_config('name: "m"'))
    assert fresh.stat().st_mode & 0o777 == 0o644
    fresh.chmod(0o640)
    write_config(fresh, parse_config('name: "m"\nbackend: "python"'))
    assert fresh.stat().st_mode & 0o777 == 0o640


def test_check_accepts_a_two_line_config_that_auto_complete_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_lines = 'name: "double"\nbackend: "python"\n'
    model_dir = make_model(tmp_path, config=two_lines)
    result = sync_config(model_dir, check=True)
    assert result.changed and result.autocompletes and not result.contradicts
    assert result.conflicts == ""
    assert _cli(str(model_dir), "--check") == 0
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith(
            "config.pbtxt: complete via auto-complete "
            "(Triton fills in the rest from the declarations at load time; "
            f"'tritonpy config {model_dir}' writes it out)"
        )
    )
    assert (model_dir / "config.pbtxt").read_text() == two_lines  # --check never writes


def test_check_accepts_a_partial_config_in_any_order(tmp_path: Path) -> None:
    # a hand-set smaller batch, one output and one input written out, in another order
    partial = textwrap.dedent(
        """\
        backend: "python"
        max_batch_size: 2
        input { name: "W" data_type: TYPE_FP32 dims: [ 1 ] optional: true }
        output { name: "Y" data_type: TYPE_FP32 dims: [ -1, 4 ] }
        """
    )
    result = sync_config(make_model(tmp_path, config=partial), check=True)
    assert result.autocompletes and not result.contradicts


@pytest.mark.parametrize(
    ("line", "conflict"),
    [
        ('input { name: "X" data_type: TYPE_INT32 dims: [ -1, 4 ] }', "-  data_type: TYPE_INT32"),
        ('output { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] }', "-  dims: 3"),
        ("max_batch_size: 16", "-max_batch_size: 16"),
        ('input { name: "OLD" data_type: TYPE_FP32 dims: [ 1 ] }', '-  name: "OLD"'),
    ],
)
def test_check_fails_on_a_config_that_contradicts_the_declarations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, conflict: str
) -> None:
    model_dir = make_model(tmp_path, config=f'name: "double"\nbackend: "python"\n{line}\n')
    result = sync_config(model_dir, check=True)
    assert result.contradicts and not result.autocompletes
    assert _cli(str(model_dir), "--check") == 1
    captured = capsys.readouterr()
    # the diff shows only the contradiction: what auto-complete adds is not in it
    assert conflict in captured.out.splitlines()
    assert "(as auto-complete completes it)" in captured.out
    assert sum(text.startswith(("-", "+")) for text in captured.out.splitlines()) < 10
    assert "contradicts the declarations" in captured.err


def test_check_fails_when_config_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = make_model(tmp_path, config=None)
    assert _cli(str(model_dir), "--check") == 1
    assert "config.pbtxt: missing; run 'tritonpy config" in capsys.readouterr().err


@pytest.mark.parametrize(
    "template",
    [
        "image_preprocess",
        "classification_postprocess",
        "detection_postprocess",
        "torch_model",
        "bls_router",
        "text_stream",
        "online_normalizer",
    ],
)
def test_shipped_template_configs_pass_check_as_they_are(template: str, tmp_path: Path) -> None:
    # the templates ship short configs (name, backend, parameters): auto-complete does the rest
    model_dir = tmp_path / template
    shutil.copytree(TEMPLATES / template, model_dir)
    result = sync_config(model_dir, check=True)
    assert result.autocompletes and not result.contradicts, result.conflicts


# tritonserver 2.51 (r24.10) refuses a config.pbtxt whose name is not its directory's, with
# this message; tests/integration/test_load_errors_agree.py checks it on the real server
SERVER_REFUSAL = (
    "unexpected directory name 'double' for model 'other', directory name must equal model name"
)


def test_a_name_other_than_the_directory_is_refused_not_renamed(tmp_path: Path) -> None:
    renamed = 'name: "other"\nbackend: "python"\n'
    model_dir = make_model(tmp_path, config=renamed)
    for check in (False, True):
        with pytest.raises(ModelNameError) as caught:
            sync_config(model_dir, check=check)
        message = str(caught.value)
        assert SERVER_REFUSAL in message
        assert "name is 'other' but the model directory is 'double'" in message
        assert 'Set name: "double"' in message and "--fix-name" in message
        assert "rename the directory to 'other'" in message
        assert (model_dir / "config.pbtxt").read_text() == renamed  # untouched
    # asked for, the rename is written; --check never writes, so it still refuses
    with pytest.raises(ModelNameError):
        sync_config(model_dir, check=True, fix_name=True)
    assert sync_config(model_dir, fix_name=True).written
    assert load_config(model_dir / "config.pbtxt").name == "double"
    assert not sync_config(model_dir, check=True).contradicts


def test_a_config_without_a_name_takes_the_directory_name(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path, config='backend: "python"\n')
    assert sync_config(model_dir, check=True).autocompletes  # the server names it so too
    sync_config(model_dir)
    assert load_config(model_dir / "config.pbtxt").name == "double"


def test_cli_refuses_a_renamed_model_and_fixes_it_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = make_model(tmp_path, config='name: "other"\nbackend: "python"\n')
    assert _cli(str(model_dir)) == 1
    assert SERVER_REFUSAL in capsys.readouterr().err
    assert _cli(str(model_dir), "--check") == 1
    assert SERVER_REFUSAL in capsys.readouterr().err
    assert _cli(str(model_dir), "--fix-name") == 0
    assert capsys.readouterr().out.strip().endswith("config.pbtxt: written")
    assert load_config(model_dir / "config.pbtxt").name == "double"
