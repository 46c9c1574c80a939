"""What an environment needs beyond its spec: the codecs' packages (found by importing
model.py), the requirements of tritonpy[extra] lines, shipped specs by name; and how pack-env
reports, records and keys them (builder and verification replaced by recorders)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tritonpy._tooling.env_archives import read_record
from tritonpy._tooling.resources import find_resource
from tritonpy.envs import EnvSpec, Reporter, SpecError, read_spec
from tritonpy.envs import _cli as envs_cli
from tritonpy.envs import _pack as pack_module
from tritonpy.envs._needs import (
    ModelScan,
    extra_requirements,
    missing_module_hint,
    plan_additions,
    scan_model,
)
from tritonpy.envs._spec import resolve_spec, shipped_specs
from tritonpy.envs._verify import VerifyReport

TORCH_AND_IMAGE = """
import tritonpy as tp


class Both(tp.Model):
    inputs = {"IMAGE": tp.Image(), "X": tp.TorchTensor("FP32", [2])}
    outputs = {"Y": tp.TorchTensor("FP32", [2]), "THUMB": tp.Image()}

    def infer(self, IMAGE, X):
        return {"Y": X, "THUMB": IMAGE}


TritonPythonModel = Both
"""

IMAGE_ONLY = """
import tritonpy as tp


class Thumb(tp.Model):
    inputs = {"IMAGE": tp.Image()}
    outputs = {"SIZE": tp.Tensor("INT64", [2])}

    def infer(self, IMAGE):
        return {"SIZE": [image.shape[:2] for image in IMAGE]}


TritonPythonModel = Thumb
"""

PLAIN = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return []
"""


def _model(root: Path, source: str, spec: str = "", name: str = "model") -> Path:
    model = root / name
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(source)
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    (model / "requirements.txt").write_text(spec)
    return model


# ------------------------------------------------------------------------ the scan and plan
def test_scan_finds_codec_needs_where_declared(tmp_path: Path) -> None:
    scan = scan_model(_model(tmp_path, TORCH_AND_IMAGE))
    assert scan.is_tritonpy and scan.error is None
    found = [(need.name, where) for need, where in scan.needs]
    assert found == [
        ("Image", "input 'IMAGE'"),
        ("TorchTensor", "input 'X'"),
        ("TorchTensor", "output 'Y'"),
        ("Image", "output 'THUMB'"),
    ]


def test_plain_model_and_no_model_need_nothing(tmp_path: Path) -> None:
    plain = scan_model(_model(tmp_path, PLAIN, name="plain"))
    assert plain.model_file is not None and not plain.is_tritonpy and plain.needs == []
    empty = tmp_path / "empty"
    (empty / "1").mkdir(parents=True)
    assert scan_model(empty) == ModelScan()


def test_scan_reports_an_import_it_cannot_do(tmp_path: Path) -> None:
    scan = scan_model(_model(tmp_path, "import no_such_module_here\n" + IMAGE_ONLY))
    assert scan.error is not None and "no_such_module_here" in scan.error
    assert scan.needs == []


def test_extras_come_from_the_running_distribution() -> None:
    assert extra_requirements("image") == ["opencv-python-headless>=4.5"]
    assert extra_requirements("torch") == ["torch>=2.0"]
    with pytest.raises(SpecError, match=r"tritonpy\[vision\].*no extra 'vision'.*image"):
        extra_requirements("vision")


def test_empty_spec_gets_one_requirement_per_package(tmp_path: Path) -> None:
    scan = scan_model(_model(tmp_path, TORCH_AND_IMAGE))
    added = plan_additions(EnvSpec(None, None), scan)
    assert [(a.requirement, a.reason) for a in added] == [
        ("opencv-python-headless>=4.5", "tp.Image (input 'IMAGE')"),
        ("torch>=2.0", "tp.TorchTensor (input 'X')"),
    ]


@pytest.mark.parametrize(
    "spec",
    [
        EnvSpec(None, None, pip=("opencv-python-headless==4.10.0.84",)),
        EnvSpec(None, None, pip=("opencv-python>=4",)),  # any OpenCV provides cv2
        EnvSpec(None, None, pip=("Opencv_Contrib.Python",)),
        EnvSpec(None, None, conda=("opencv >=4",)),  # the conda builder's package
    ],
)
def test_the_users_opencv_wins(tmp_path: Path, spec: EnvSpec) -> None:
    scan = scan_model(_model(tmp_path, IMAGE_ONLY))
    assert plan_additions(spec, scan) == []


def test_tritonpy_extra_lines_are_honoured(tmp_path: Path) -> None:
    spec_file = tmp_path / "requirements.txt"
    spec_file.write_text("numpy<2\ntritonpy[image,torch]==0.0.1\ntorch==2.13.0\n")
    spec = read_spec(spec_file)
    added = plan_additions(spec, scan_model(_model(tmp_path, IMAGE_ONLY)))
    # the extra brings OpenCV (the model's codec then needs nothing more); the pinned torch wins
    assert [(a.requirement, a.reason) for a in added] == [
        ("opencv-python-headless>=4.5", "tritonpy[image] in the spec")
    ]


def test_missing_module_hints() -> None:
    assert missing_module_hint("cv2") == "opencv-python-headless"
    assert missing_module_hint("sklearn.linear_model") == "scikit-learn"
    assert missing_module_hint("my_package") == "my-package"


# ---------------------------------------------------------------------------- shipped specs
def test_shipped_spec_by_name() -> None:
    assert {"numpy", "opencv", "torch-cpu"} <= set(shipped_specs())
    assert resolve_spec("opencv") == find_resource("envs/opencv.yml")
    assert resolve_spec("opencv.yml") == find_resource("envs/opencv.yml")
    assert "opencv-python-headless" in read_spec(resolve_spec("opencv")).distributions


def test_a_file_wins_over_a_shipped_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("opencv").write_text("opencv-python==4.10.0.84\n")
    assert resolve_spec("opencv") == Path("opencv")


def test_unknown_spec_name_lists_the_shipped_ones() -> None:
    with pytest.raises(SpecError, match=r"'opencv2'.*shipped: numpy, opencv, torch-cpu.*--env"):
        resolve_spec("opencv2")


@pytest.mark.parametrize("value", ["nope.txt", "sub/nope.txt"])
def test_a_missing_spec_says_where_it_looked(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        resolve_spec(value)
    assert str(caught.value) == (
        f"the environment spec {value!r} is neither a file (no file {tmp_path / value}) nor a "
        f"spec shipped with tritonpy (shipped: {', '.join(shipped_specs())}). Pass the path of "
        "a conda environment file (--env FILE) or requirements file (--requirements FILE), or "
        "one of the shipped names (--env opencv)."
    )


# ----------------------------------------------- pack_env wiring (builder, verify recorded)
class Notes(Reporter):
    def __init__(self) -> None:
        self.notes: List[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Dict[str, Any]:
    """Replace the build and the verification by recorders (the archive is a tiny tarball)."""
    calls: Dict[str, Any] = {"builds": 0}

    def build(spec: Any, base: Any, prefix: Path, *, extra: Any, reporter: Any, wheel: Any) -> Path:
        calls.update(builds=calls["builds"] + 1, spec=spec, extra=list(extra), wheel=wheel)
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "activate").write_text("")
        return prefix

    def verify(archive: Path, xy: str, **kwargs: Any) -> VerifyReport:
        calls["verify"] = kwargs
        return VerifyReport(xy, "/env", "/env/lib/libpython3.10.so.1.0")

    monkeypatch.setattr(pack_module, "build_local_env", build)
    monkeypatch.setattr(pack_module, "verify_archive", verify)
    return calls


def test_pack_adds_reports_records_and_verifies_the_model(
    tmp_path: Path, recorded: Dict[str, Any]
) -> None:
    model = _model(tmp_path, IMAGE_ONLY, spec="numpy<2\n")
    notes = Notes()
    result = pack_env_local(model, reporter=notes)
    assert result.added == ["opencv-python-headless>=4.5"]
    assert "added opencv-python-headless>=4.5 for tp.Image (input 'IMAGE')" in notes.notes
    assert recorded["extra"] == ["numpy<2", "opencv-python-headless>=4.5"]
    assert recorded["wheel"].name.startswith("tritonpy-") and recorded["wheel"].suffix == ".whl"
    verify = recorded["verify"]
    assert verify["model_file"] == model / "1" / "model.py"
    assert verify["distributions"] == ["numpy", "opencv-python-headless"]
    assert ("tritonpy._runtime.codecs.image", "Image", "cv2") in verify["codecs"]
    assert verify["tritonpy_version"] == pack_module.running_tritonpy().version
    assert read_record(model)["model_py3.10.tar.gz"]["added"] == ["opencv-python-headless>=4.5"]


def test_new_codec_needs_rebuild_and_user_pins_skip_additions(
    tmp_path: Path, recorded: Dict[str, Any]
) -> None:
    model = _model(tmp_path, PLAIN, spec="numpy<2\n")
    assert pack_env_local(model).added == []
    assert pack_env_local(model).skipped
    (model / "1" / "model.py").write_text(IMAGE_ONLY)  # now the model needs OpenCV
    again = pack_env_local(model)
    assert not again.skipped and again.added == ["opencv-python-headless>=4.5"]
    (model / "requirements.txt").write_text("numpy<2\nopencv-python-headless==4.10.0.84\n")
    pinned = pack_env_local(model)
    assert not pinned.skipped and pinned.added == []
    assert recorded["builds"] == 3


def test_a_pinned_tritonpy_line_is_reported_not_installed(
    tmp_path: Path, recorded: Dict[str, Any]
) -> None:
    model = _model(tmp_path, PLAIN, spec="tritonpy==0.0.1\n")
    notes = Notes()
    pack_env_local(model, reporter=notes)
    assert any("'tritonpy==0.0.1' is not installed" in n for n in notes.notes)
    assert not any("tritonpy" in line for line in recorded["extra"])
    assert recorded["wheel"] is not None


def test_cli_env_accepts_a_shipped_name(
    tmp_path: Path, recorded: Dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path, IMAGE_ONLY)
    parser = argparse.ArgumentParser(prog="tritonpy")
    envs_cli.add_parser(parser.add_subparsers())
    argv = ["pack-env", str(model), "--env", "opencv", "--builder", "local", "--stub", "never"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0, capsys.readouterr().err
    assert recorded["spec"].source == find_resource("envs/opencv.yml")
    assert recorded["spec"].name == "opencv"
    assert (model / "opencv_py3.10.tar.gz").is_file()
    assert "added" not in capsys.readouterr().err  # the shipped spec already names OpenCV


def pack_env_local(model: Path, reporter: Any = None) -> Any:
    return pack_module.pack_env(
        model, python="3.10", builder="local", stub="never", compress_level=1, reporter=reporter
    )
