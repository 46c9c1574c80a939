"""pack-env's options around the import check and nested requirements files, wired through
(the build and the verification replaced by recorders; tests/integration/test_pack_env.py
packs for real): --skip-import-check reaches verification, its warnings reach the CLI's
output, a nested -r file lists its packages in the progress line and rebuilds when it
changes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest

from tritonpy.envs import Reporter, read_spec
from tritonpy.envs import _cli as envs_cli
from tritonpy.envs import _local as local_module
from tritonpy.envs import _pack as pack_module
from tritonpy.envs._verify import VerifyReport

PLAIN = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for _ in requests]
"""


class Notes(Reporter):
    def __init__(self) -> None:
        self.notes: List[str] = []
        self.steps: List[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)

    def start(self, step: str) -> None:
        self.steps.append(step)


def _model(root: Path, spec: str) -> Path:
    model = root / "model"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(PLAIN)
    (model / "config.pbtxt").write_text('name: "model"\nbackend: "python"\n')
    (model / "requirements.txt").write_text(spec)
    return model


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Dict[str, Any]:
    calls: Dict[str, Any] = {"builds": 0, "warnings": []}

    def build(spec: Any, base: Any, prefix: Path, *, extra: Any, reporter: Any, wheel: Any) -> Path:
        calls.update(builds=calls["builds"] + 1, spec=spec)
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "activate").write_text("")
        return prefix

    def verify(archive: Path, xy: str, **kwargs: Any) -> VerifyReport:
        calls["verify"] = kwargs
        report = VerifyReport(xy, "/env", "/env/lib/libpython3.10.so.1.0")
        report.warnings = list(calls["warnings"])
        return report

    monkeypatch.setattr(pack_module, "build_local_env", build)
    monkeypatch.setattr(pack_module, "verify_archive", verify)
    return calls


def _pack(model: Path, **changes: Any) -> Any:
    return pack_module.pack_env(
        model, python="3.10", builder="local", stub="never", compress_level=1, **changes
    )


def test_skipped_distributions_reach_verification(tmp_path: Path, recorded: Dict[str, Any]) -> None:
    model = _model(tmp_path, "numpy<2\nscikit-learn\n")
    notes = Notes()
    _pack(model, skip_import_check=("Scikit_Learn", "pandas"), reporter=notes)
    assert recorded["verify"]["skip"] == ("Scikit_Learn", "pandas")
    assert recorded["verify"]["distributions"] == ["numpy", "scikit-learn"]
    assert (
        "skip_import_check names 'pandas', which is not among the distributions checked "
        "(numpy, scikit-learn): nothing skipped for it"
    ) in notes.notes
    assert "not importing the modules of Scikit_Learn (skip_import_check)" in notes.notes


def test_cli_skip_flag_repeats_and_warnings_are_printed(
    tmp_path: Path, recorded: Dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path, "scikit-learn\nbeautifulsoup4\n")
    recorded["warnings"] = ["distribution x: no module 'x' in the environment (...)"]
    parser = argparse.ArgumentParser(prog="tritonpy")
    envs_cli.add_parser(parser.add_subparsers())
    argv = ["pack-env", str(model), "--builder", "local", "--python", "3.10", "--stub", "never"]
    argv += ["--skip-import-check", "scikit-learn", "--skip-import-check", "beautifulsoup4"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    assert recorded["verify"]["skip"] == ("scikit-learn", "beautifulsoup4")
    err = capsys.readouterr().err
    assert "tritonpy: warning: distribution x: no module 'x' in the environment (...)\n" in err


def test_cli_without_the_flag_skips_nothing(tmp_path: Path, recorded: Dict[str, Any]) -> None:
    parser = argparse.ArgumentParser(prog="tritonpy")
    envs_cli.add_parser(parser.add_subparsers())
    argv = ["pack-env", str(_model(tmp_path, "numpy<2\n")), "--builder", "local"]
    args = parser.parse_args([*argv, "--python", "3.10", "--stub", "never"])
    assert args.func(args) == 0
    assert recorded["verify"]["skip"] == ()


def test_a_change_of_a_nested_file_rebuilds(tmp_path: Path, recorded: Dict[str, Any]) -> None:
    model = _model(tmp_path, "-r shared/base.txt\n")
    (model / "shared").mkdir()
    (model / "shared" / "base.txt").write_text("numpy<2\n-r more.txt\n")
    (model / "shared" / "more.txt").write_text("scikit-learn\n")
    assert not _pack(model).skipped
    assert recorded["verify"]["distributions"] == ["numpy", "scikit-learn"]
    assert _pack(model).skipped  # nothing changed
    (model / "shared" / "more.txt").write_text("scikit-learn\nPyYAML\n")
    again = _pack(model)
    assert not again.skipped
    assert recorded["builds"] == 2
    assert recorded["verify"]["distributions"] == ["numpy", "scikit-learn", "pyyaml"]


def test_progress_line_lists_the_packages_of_nested_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text("numpy<2\n-r nested.txt\n")
    (tmp_path / "nested.txt").write_text("scikit-learn>=1.3\nbeautifulsoup4\n")
    installed: List[str] = []

    def run(argv: Sequence[Any], reporter: Any, **kwargs: Any) -> None:
        installed.extend(Path(argv[argv.index("-r") + 1]).read_text().splitlines())

    monkeypatch.setattr(local_module, "run_command", run)
    notes = Notes()
    prefix = tmp_path / "env"
    prefix.mkdir()
    spec = read_spec(tmp_path / "requirements.txt")
    local_module.install_requirements(
        prefix / "bin" / "python3.10", prefix, spec, ["numpy<2"], wheel=None, reporter=notes,
        where="Python 3.10",
    )  # fmt: skip
    assert notes.steps == ["installing numpy, scikit-learn, beautifulsoup4, tritonpy with pip"]
    assert installed == ["numpy<2", "scikit-learn>=1.3", "beautifulsoup4", "numpy<2"]
