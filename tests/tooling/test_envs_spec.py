"""Environment specs: conda environment files (PyYAML), requirements files (packaging),
numpy pin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tritonpy._runtime.errors import MissingDependencyError
from tritonpy._tooling.releases import TritonRelease
from tritonpy.envs import EnvSpec, SpecError, read_spec
from tritonpy.envs._conda import conda_create_command
from tritonpy.envs._runtime import check_numpy_pin, runtime_requirements
from tritonpy.envs._spec import parse_environment_yaml, requirement_extras, requirement_name

ROOT = Path(__file__).resolve().parents[2]


def test_environment_file_with_pip_section(tmp_path: Path) -> None:
    (tmp_path / "extra.txt").write_text("scipy\n")
    path = tmp_path / "env.yml"
    path.write_text(
        "# a comment\n"
        "name: vision  # trailing comment\n"
        "channels: [conda-forge, defaults]\n"
        "dependencies:\n"
        "  - python=3.10.*\n"
        "  - python-dateutil\n"
        "  - pip\n"
        "  - 'libjpeg-turbo >=3'\n"
        "  - pip:\n"
        "      - numpy<2\n"
        '      - "opencv-python-headless>=4.5,<5"\n'
        "      - tritonpy[image]>=0.1\n"
        "      - -r extra.txt\n"
    )
    spec = read_spec(path)
    assert spec.name == "vision"
    assert spec.python == "3.10"
    assert spec.channels == ("conda-forge", "defaults")
    assert spec.conda == ("python-dateutil", "libjpeg-turbo >=3")
    assert spec.pip == ("numpy<2", "opencv-python-headless>=4.5,<5", f"-r {tmp_path}/extra.txt")
    assert spec.distributions == ["numpy", "opencv-python-headless"]
    assert spec.tritonpy_lines == ("tritonpy[image]>=0.1",)
    assert spec.tritonpy_extras == ["image"]


def test_environment_yaml_shape() -> None:
    text = "name: x\ndependencies:\n- python>=3.11,<3.12\n- pip:\n  - a==1\n  - b\n"
    assert parse_environment_yaml(text) == {
        "name": "x",
        "dependencies": ["python>=3.11,<3.12", {"pip": ["a==1", "b"]}],
    }


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "env.yml"
    path.write_text("name: x\ndependencies:\n  - python=3.10\n  oops\n")
    with pytest.raises(SpecError, match=r"env.yml, line 4"):
        read_spec(path)


def test_missing_yaml_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "env.yml"
    path.write_text("name: x\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # an import of yaml now fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'tritonpy\[tools\]'"):
        read_spec(path)


def test_requirements_file(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("--extra-index-url https://example.org/simple\nnumpy<2  # pinned\ntritonpy\n")
    spec = read_spec(path)
    assert spec.python is None
    assert spec.pip == ("--extra-index-url https://example.org/simple", "numpy<2")
    assert spec.distributions == ["numpy"]
    assert spec.tritonpy_lines == ("tritonpy",) and spec.tritonpy_extras == []


def test_missing_spec_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"--env envs/NAME.yml"):
        read_spec(tmp_path / "nope.yml")


@pytest.mark.parametrize("name", ["numpy.yml", "opencv.yml", "torch-cpu.yml"])
def test_shipped_specs_pin_python_and_numpy(name: str) -> None:
    spec = read_spec(ROOT / "envs" / name)
    assert spec.python in ("3.10", "3.11")
    assert "numpy<2" in spec.pip
    assert not spec.conda
    check_numpy_pin(spec.pip, TritonRelease.parse("24.10"))


def test_numpy2_refused_before_24_12() -> None:
    with pytest.raises(SpecError, match=r"numpy>=2.*24.12"):
        check_numpy_pin(["numpy>=2.0"], TritonRelease.parse("24.10"))
    check_numpy_pin(["numpy>=2.0"], TritonRelease.parse("24.12"))
    assert runtime_requirements(TritonRelease.parse("24.10")) == ["numpy<2"]
    assert runtime_requirements(TritonRelease.parse("25.01")) == ["numpy>=1.21"]


def test_digest_changes_with_content() -> None:
    a = EnvSpec("x", "3.10", pip=("numpy<2",))
    assert a.digest == EnvSpec("x", "3.10", pip=("numpy<2",)).digest
    assert a.digest != a.with_python("3.11").digest
    assert a.digest != EnvSpec("x", "3.10", pip=("numpy<1.26",)).digest


def test_requirement_names() -> None:
    assert requirement_name("Pillow_SIMD==9") == "pillow-simd"
    assert requirement_name("pkg @ https://x/y.whl") == "pkg"
    assert requirement_name("./local/pkg") is None
    assert requirement_name("--index-url https://x") is None
    assert requirement_name("numpy==1.26.4 --hash=sha256:abc") == "numpy"
    assert requirement_extras("tritonpy[Torch, image] >= 0.1") == ["image", "torch"]


def test_conda_create_command_uses_spec_channels() -> None:
    spec = EnvSpec("x", "3.10", conda=("libjpeg-turbo", "pip=24"), channels=("nvidia",))
    argv = conda_create_command(Path("/bin/micromamba"), Path("/p"), spec, "3.10")
    assert argv == [
        "/bin/micromamba",
        "create",
        "--yes",
        "--prefix",
        "/p",
        "--override-channels",
        "-c",
        "nvidia",
        "python=3.10",
        "pip",
        "libjpeg-turbo",
    ]
