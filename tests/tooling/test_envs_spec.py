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
    # the nested file's requirements are inlined (and count as the spec's)
    assert spec.pip == ("numpy<2", "opencv-python-headless>=4.5,<5", "scipy")
    assert spec.distributions == ["numpy", "opencv-python-headless", "scipy"]
    assert spec.included == (((tmp_path / "extra.txt").resolve(), "scipy\n"),)
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


def test_numpy2_refused_before_24_11() -> None:
    # the message names the release, the stub's pybind11 and the table's citation
    with pytest.raises(
        SpecError,
        match=r"numpy>=2.*release 24.10 stub is built with pybind11 2.10.*"
        r"python_backend@r23.01:CMakeLists.txt.*24.11 or later",
    ):
        check_numpy_pin(["numpy>=2.0"], TritonRelease.parse("24.10"))
    check_numpy_pin(["numpy>=2.0"], TritonRelease.parse("24.11"))
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


# ---------------------------------------------------------------- nested -r / -c files
def test_nested_requirement_files_are_followed(tmp_path: Path) -> None:
    (tmp_path / "reqs").mkdir()
    (tmp_path / "constraints").mkdir()
    (tmp_path / "requirements.txt").write_text(
        "numpy<2\n-r reqs/base.txt  # relative to this file\n--constraint=constraints/c.txt\n"
    )
    (tmp_path / "reqs" / "base.txt").write_text(
        "scikit-learn>=1.3\n--requirement=more.txt\n-rmore.txt\ntritonpy[image]\n"
    )
    (tmp_path / "reqs" / "more.txt").write_text("PyYAML  # relative to reqs/\n")
    (tmp_path / "constraints" / "c.txt").write_text("scipy<2\n-c ../reqs/pins.txt\n")
    (tmp_path / "reqs" / "pins.txt").write_text("joblib<2\n")
    spec = read_spec(tmp_path / "requirements.txt")
    # -r files inlined, once each; the -c file stays a (absolute) constraint for pip
    assert spec.pip == (
        "numpy<2",
        "scikit-learn>=1.3",
        "PyYAML",
        f"-c {tmp_path / 'constraints' / 'c.txt'}",
    )
    assert spec.distributions == ["numpy", "scikit-learn", "pyyaml"]
    assert spec.tritonpy_lines == ("tritonpy[image]",)
    assert [p.name for p, _ in spec.included] == ["base.txt", "more.txt", "c.txt", "pins.txt"]


def test_a_change_of_any_nested_file_changes_the_digest(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r base.txt\n-c pins.txt\n")
    (tmp_path / "base.txt").write_text("-r deep.txt\n")
    (tmp_path / "deep.txt").write_text("numpy<2\n")
    (tmp_path / "pins.txt").write_text("-c deeper-pins.txt\n")
    (tmp_path / "deeper-pins.txt").write_text("numpy==1.26.4\n")
    digests = [read_spec(tmp_path / "requirements.txt").digest]
    for name, text in [("deep.txt", "numpy<1.27\n"), ("deeper-pins.txt", "numpy==1.26.3\n")]:
        (tmp_path / name).write_text(text)
        digests.append(read_spec(tmp_path / "requirements.txt").digest)
    assert len(set(digests)) == 3


def test_nested_files_of_an_environment_file(tmp_path: Path) -> None:
    (tmp_path / "env.yml").write_text(
        "name: x\ndependencies:\n  - python=3.10\n  - pip:\n      - -r requirements.txt\n"
    )
    (tmp_path / "requirements.txt").write_text("beautifulsoup4\n")
    spec = read_spec(tmp_path / "env.yml")
    assert spec.pip == ("beautifulsoup4",)
    assert spec.distributions == ["beautifulsoup4"]


def test_a_cycle_of_nested_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy<2\n-r a.txt\n")
    (tmp_path / "a.txt").write_text("-r b.txt\n")
    (tmp_path / "b.txt").write_text("-r requirements.txt\n")
    with pytest.raises(SpecError) as caught:
        read_spec(tmp_path / "requirements.txt")
    root = tmp_path.resolve()
    assert str(caught.value) == (
        f"{tmp_path / 'b.txt'}: '-r requirements.txt' makes a cycle of requirements files "
        f"({root / 'requirements.txt'} -> {root / 'a.txt'} -> {root / 'b.txt'} -> "
        f"{root / 'requirements.txt'}); remove one of the -r/-c lines of that cycle"
    )


def test_a_file_included_twice_is_not_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r a.txt\n-r b.txt\n")
    (tmp_path / "a.txt").write_text("-r common.txt\n")
    (tmp_path / "b.txt").write_text("-r common.txt\nPillow\n")
    (tmp_path / "common.txt").write_text("numpy<2\n")
    assert read_spec(tmp_path / "requirements.txt").pip == ("numpy<2", "Pillow")


def test_a_missing_nested_file_names_the_line_and_the_path(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "requirements.txt").write_text("-r sub/a.txt\n")
    (tmp_path / "sub" / "a.txt").write_text("-c pins.txt\n")
    with pytest.raises(SpecError) as caught:
        read_spec(tmp_path / "requirements.txt")
    assert str(caught.value) == (
        f"{tmp_path / 'sub' / 'a.txt'}: the line '-c pins.txt' names "
        f"{tmp_path / 'sub' / 'pins.txt'}, which cannot be read (No such file or directory). "
        "Paths after -r/-c are relative to the file that names them; fix the path or create "
        "the file."
    )


def test_a_nested_url_is_left_to_pip(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r https://example.org/requirements.txt\n")
    spec = read_spec(tmp_path / "requirements.txt")
    assert spec.pip == ("-r https://example.org/requirements.txt",)
    assert spec.included == ()
