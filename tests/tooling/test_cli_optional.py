"""Missing optional dependencies: one MissingDependencyError naming the feature, the packages
and the pip command; ``tritonpy`` prints it as one line and exits with 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tritonpy
from tritonpy._runtime._optional import install_command, optional_import, require
from tritonpy._runtime.errors import MissingDependencyError, ToolError
from tritonpy.cli import main

TWO_LINES = 'name: "m"\nbackend: "python"\n'
MODEL = """\
import tritonpy as tp


class M(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1])}
    outputs = {"Y": tp.Tensor("FP32", [1])}

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = M
"""


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``import module`` fail as if the package were not installed."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_require_names_feature_packages_and_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide(monkeypatch, "google.protobuf", "tritonclient.grpc")
    with pytest.raises(MissingDependencyError) as info:
        require("tritonclient.grpc", "google.protobuf", extra="config", feature="tritonpy check")
    error = info.value
    assert isinstance(error, ToolError)
    assert str(error) == (
        "tritonpy check needs tritonclient[grpc] and protobuf (not installed): "
        "pip install 'tritonpy[config]'"
    )
    assert error.modules == ("tritonclient.grpc", "google.protobuf")
    assert error.extra == "config" and error.install == "pip install 'tritonpy[config]'"


def test_require_lists_only_what_is_missing_and_passes_when_nothing_is() -> None:
    require("json", "numpy", feature="anything")  # installed: no error
    assert optional_import("json", feature="anything").dumps([1]) == "[1]"
    with pytest.raises(MissingDependencyError, match=r"^f needs no_such_pkg_x \(not installed\)"):
        require("json", "no_such_pkg_x", feature="f")


def test_install_command_combines_extras_and_plain_packages() -> None:
    assert install_command(["cv2", "sklearn"]) == "pip install 'tritonpy[image]' scikit-learn"
    assert install_command(["torch", "cv2"]) == "pip install 'tritonpy[torch,image]'"
    assert install_command(["tritonclient.grpc"], "testing") == "pip install 'tritonpy[testing]'"


def test_tritonclient_runtime_error_for_a_missing_extra_counts_as_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tritonclient.grpc raises RuntimeError (from ModuleNotFoundError) without its extra
    for name in [m for m in sys.modules if m.startswith("tritonclient.grpc")]:
        monkeypatch.delitem(sys.modules, name)
    hide(monkeypatch, "grpc")
    with pytest.raises(MissingDependencyError, match=r"needs tritonclient\[grpc\] \(not inst"):
        require("tritonclient.grpc", extra="config", feature="f")


def test_a_module_that_fails_to_import_is_reported_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_native_mod.py").write_text("raise ImportError('libfoo.so: not found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependencyError) as info:
        require("broken_native_mod", feature="f")
    assert "installed but cannot be imported: broken_native_mod: libfoo.so: not found" in str(
        info.value
    )


def test_tritonpy_config_without_protobuf_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text(MODEL)
    (tmp_path / "m" / "config.pbtxt").write_text(TWO_LINES)
    hide(monkeypatch, "google.protobuf", "tritonclient.grpc")
    assert main(["config", str(tmp_path / "m"), "--check"]) == 2
    assert one_line_error(capsys) == (
        "tritonpy: error: tritonpy config needs tritonclient[grpc] and protobuf (not installed): "
        "pip install 'tritonpy[config]'"
    )


def test_tritonpy_new_ensemble_without_torch_is_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "torch")
    args = ["new", "e", "--template", "ensemble_classifier", "--repo", str(tmp_path / "repo")]
    assert main(args) == 2
    assert one_line_error(capsys) == (
        "tritonpy: error: tritonpy new needs torch (not installed): pip install 'tritonpy[torch]'"
    )
    assert not (tmp_path / "repo").exists() or not list((tmp_path / "repo").iterdir())


def test_tritonpy_infer_without_tritonclient_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "tritonclient.http")
    assert main(["infer", "m", "--url", "http://127.0.0.1:9", "-i", "X=1"]) == 2
    assert one_line_error(capsys) == (
        "tritonpy: error: tritonpy infer needs tritonclient[http] (not installed): "
        "pip install 'tritonpy[client]'"
    )


def test_the_demo_names_everything_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "sklearn", "cv2")
    assert main(["demo", "--limit", "1"]) == 2
    assert one_line_error(capsys) == (
        "tritonpy: error: tritonpy demo needs opencv-python-headless and scikit-learn "
        "(not installed): pip install 'tritonpy[image]' scikit-learn"
    )


def test_the_error_is_part_of_the_public_tree() -> None:
    assert "MissingDependencyError" in tritonpy.__all__
    assert issubclass(MissingDependencyError, tritonpy.TritonPyError)
    error = MissingDependencyError("x", ("cv2",), ("opencv-python-headless",), "image", "cmd")
    assert str(error.for_feature("tritonpy y")).startswith("tritonpy y needs opencv")


def test_tritonpy_serve_without_the_server_extra_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        return None if name == "pytriton" else real_find_spec(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))  # serve's log files
    (tmp_path / "repo").mkdir()
    assert main(["serve", str(tmp_path / "repo"), "--no-check", "--quiet"]) == 2
    line = one_line_error(capsys)
    assert line == (
        "tritonpy: error: tritonpy serve needs nvidia-pytriton (not installed; or pass "
        "--tritonserver PATH): pip install 'tritonpy[server]'"
    )


def test_the_conda_builder_without_conda_pack_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tritonpy._tooling.progress import Reporter
    from tritonpy.envs._conda import conda_pack_archive

    hide(monkeypatch, "conda_pack")
    with pytest.raises(MissingDependencyError) as caught:
        conda_pack_archive(tmp_path / "env", tmp_path / "env.tar.gz", reporter=Reporter())
    assert caught.value.install == "pip install 'tritonpy[pack]'"
