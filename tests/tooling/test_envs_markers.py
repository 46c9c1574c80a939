"""Environment markers of spec lines are evaluated for the environment being built (its Python
X.Y and full version, Linux, this machine's architecture), not for the interpreter running
the tests (3.11 here): a line whose marker is false there stays in what pip reads but is
neither listed nor verified, with a note saying why; an unparsable requirement line is
refused naming its file and line. The build and the verification of pack_env are replaced by
recorders here; tests/integration/test_pack_env.py packs such a spec for real."""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest
from packaging.markers import Marker

from tritonpy.envs import Reporter, SpecError, read_spec
from tritonpy.envs import _local as local_module
from tritonpy.envs import _pack as pack_module
from tritonpy.envs._markers import TargetPython, marker_applies
from tritonpy.envs._needs import Addition
from tritonpy.envs._spec import requirement_applies
from tritonpy.envs._verify import VerifyReport

RUNNING = f"{sys.version_info[0]}.{sys.version_info[1]}"
MACHINE = platform.machine()
PLAIN = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for _ in requests]
"""


# ------------------------------------------------------------------ evaluation for a target
@pytest.mark.parametrize(
    ("marker", "xy", "expected"),
    [
        ('python_version < "3.9"', "3.10", False),
        ('python_version < "3.9"', "3.8", True),
        ('python_version >= "3.12"', "3.11", False),
        ('python_version >= "3.12"', "3.12", True),
        ('sys_platform == "win32"', "3.10", False),
        ('sys_platform == "linux" and os_name == "posix"', "3.10", True),
        ('platform_system == "Darwin"', "3.10", False),
        ('platform_python_implementation == "PyPy"', "3.10", False),
        ('extra == "gpu"', "3.10", False),  # pip evaluates a requirements line with no extra
    ],
)
def test_markers_are_evaluated_for_the_target_python(marker: str, xy: str, expected: bool) -> None:
    assert marker_applies(Marker(marker), TargetPython(xy, None, "x86_64")) is expected


def test_the_target_is_not_the_running_interpreter() -> None:
    assert RUNNING != "3.8"
    marker = Marker('python_version < "3.9"')
    assert marker.evaluate() is False  # for the running interpreter
    assert marker_applies(marker, TargetPython("3.8")) is True  # for a 3.8 environment


def test_the_machine_decides_platform_machine() -> None:
    marker = Marker('platform_machine == "aarch64"')
    assert marker_applies(marker, TargetPython("3.10", None, "aarch64")) is True
    assert marker_applies(marker, TargetPython("3.10", None, "x86_64")) is False
    assert TargetPython("3.10").machine == MACHINE  # this machine's by default


def test_the_full_version_decides_only_when_known() -> None:
    marker = Marker('python_full_version < "3.10.9"')
    assert marker_applies(marker, TargetPython("3.10", "3.10.13")) is False
    assert marker_applies(marker, TargetPython("3.10", "3.10.4")) is True
    assert marker_applies(marker, TargetPython("3.10", None)) is None  # conda: not known yet
    implementation = Marker('implementation_version >= "3.10.13"')
    assert marker_applies(implementation, TargetPython("3.10", "3.10.13")) is True
    assert marker_applies(implementation, TargetPython("3.10")) is None


def test_an_undecided_python_leaves_python_markers_undecided() -> None:
    assert marker_applies(Marker('python_version < "3.9"'), TargetPython(None)) is None
    assert marker_applies(Marker('sys_platform == "win32"'), TargetPython(None)) is False


def test_no_marker_applies_and_options_apply() -> None:
    target = TargetPython("3.10")
    assert marker_applies(None, target) is True
    assert requirement_applies("numpy<2", target)
    assert requirement_applies("--extra-index-url https://example.invalid/simple", target)
    assert requirement_applies("./wheels/local.whl", target)
    assert not requirement_applies('pywin32>=306; sys_platform == "win32"', target)


def test_the_target_is_described_with_what_is_known() -> None:
    assert TargetPython("3.10", None, "x86_64").describe() == "Python 3.10 (Linux x86_64)"
    full = TargetPython("3.10", "3.10.13", "aarch64").describe()
    assert full == "Python 3.10 (3.10.13, Linux aarch64)"


# ------------------------------------------------------------------------------- the spec
def test_a_false_marker_line_is_kept_for_pip_but_not_listed(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(
        'numpy<2\nfoo; python_version < "3.9"\npywin32; sys_platform == "win32"\n'
        'tomli>=1.1; python_version < "3.11"\n'
    )
    spec = read_spec(path).with_python("3.10", "3.10.13")
    assert spec.pip == (
        "numpy<2",
        'foo; python_version < "3.9"',
        'pywin32; sys_platform == "win32"',
        'tomli>=1.1; python_version < "3.11"',
    )  # pip reads every line and evaluates the markers itself
    assert spec.distributions == ["numpy", "tomli"]
    assert [s.reason for s in spec.marker_skipped] == [
        f'foo: marker python_version < "3.9" is false for Python 3.10 (3.10.13, Linux {MACHINE})',
        f'pywin32: marker sys_platform == "win32" is false for Python 3.10 (3.10.13, Linux '
        f"{MACHINE})",
    ]
    assert spec.applicable_pip == ("numpy<2", 'tomli>=1.1; python_version < "3.11"')


def test_the_same_spec_for_another_python_keeps_other_lines(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text('foo; python_version < "3.9"\ntomli>=1.1; python_version < "3.11"\n')
    assert read_spec(path).with_python("3.8").distributions == ["foo", "tomli"]
    assert read_spec(path).with_python("3.12").distributions == []
    assert read_spec(path).distributions == ["foo", "tomli"]  # no Python yet: undecided


def test_markers_of_nested_files_and_of_environment_files(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy<2\n-r nested/more.txt\n")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "more.txt").write_text(
        "scikit-learn\nbackports.zoneinfo; python_version < '3.9'\n"
    )
    nested = read_spec(tmp_path / "requirements.txt").with_python("3.10")
    assert nested.distributions == ["numpy", "scikit-learn"]
    assert [s.name for s in nested.marker_skipped] == ["backports-zoneinfo"]
    (tmp_path / "environment.yml").write_text(
        "name: e\ndependencies:\n  - python=3.10\n  - pip:\n      - numpy<2\n"
        "      - 'pywin32; sys_platform == \"win32\"'\n"
    )
    conda = read_spec(tmp_path / "environment.yml")
    assert conda.python == "3.10" and conda.distributions == ["numpy"]
    assert [s.marker for s in conda.marker_skipped] == ['sys_platform == "win32"']


def test_tritonpy_lines_with_a_false_marker_ask_for_no_extra(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text('tritonpy[image]; python_version >= "3.12"\ntritonpy[torch]\n')
    assert read_spec(path).with_python("3.10").tritonpy_extras == ["torch"]
    assert read_spec(path).with_python("3.12").tritonpy_extras == ["image", "torch"]


# ------------------------------------------------------------------ unparsable requirements
@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("numpy<2\n\n# pins\nnumpy=1.26\n", 4, "Did you mean 'numpy==1.26'?"),
        ("foo; python_version < 3.9\n", 1, "foo; python_version < 3.9"),
        ("numpy >= \n", 1, "'numpy >='"),
        ("good\nfoo bar\n", 2, "'foo bar'"),
    ],
)
def test_an_unparsable_line_names_the_file_and_line(
    tmp_path: Path, text: str, line: int, why: str
) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        read_spec(path)
    message = str(caught.value)
    assert message.startswith(f"{path}, line {line}: ")
    assert "is not a valid requirement (" in message and why in message
    assert "a pip option (--index-url URL, -e PATH), a path or a URL; fix the line" in message


def test_an_unparsable_line_of_a_nested_file_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy<2\n-r more.txt\n")
    (tmp_path / "more.txt").write_text("scikit-learn\n\nscipy=1.11\n")
    with pytest.raises(SpecError, match=r"more\.txt, line 3: 'scipy=1\.11' is not a valid"):
        read_spec(tmp_path / "requirements.txt")


def test_an_unparsable_pip_entry_of_an_environment_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "environment.yml"
    path.write_text("name: e\ndependencies:\n  - pip:\n      - numpy<2\n      - torch=2.1\n")
    with pytest.raises(SpecError) as caught:
        read_spec(path)
    assert str(caught.value).startswith(f"{path}, line 5: 'torch=2.1' is not a valid")


def test_pip_option_lines_paths_and_urls_stay_as_they_are(tmp_path: Path) -> None:
    lines = [
        "--index-url https://example.invalid/simple",
        "--extra-index-url=https://example.invalid/extra",
        "-e .",
        "-e git+https://example.invalid/repo.git#egg=pkg",
        "./local/pkg",
        "../sibling",
        "~/src/pkg",
        "wheels/pkg-1.0-py3-none-any.whl",
        "pkg-1.0.tar.gz",
        "git+https://example.invalid/repo.git@main",
        "https://example.invalid/pkg-1.0.zip",
        "file:///tmp/pkg",
        "pkg @ https://example.invalid/pkg-1.0-py3-none-any.whl",
        "pkg==${PKG_VERSION}",
        "numpy==1.26.4 --hash=sha256:0123",
    ]
    path = tmp_path / "requirements.txt"
    path.write_text("\n".join(lines) + "\n")
    assert read_spec(path).pip == tuple(lines)


def test_continuation_lines_are_joined_as_pip_joins_them(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(
        "numpy==1.26.4 \\\n    --hash=sha256:0123 \\\n    --hash=sha256:4567\nscipy=1\n"
    )
    with pytest.raises(SpecError, match=r"requirements\.txt, line 4: 'scipy=1'"):
        read_spec(path)  # line numbers count the continued lines
    path.write_text("numpy==1.26.4 \\\n    --hash=sha256:0123\n")
    spec = read_spec(path)
    assert spec.pip == ("numpy==1.26.4     --hash=sha256:0123",)
    assert spec.distributions == ["numpy"]


# ---------------------------------------------------------------------- through pack_env
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
    """pack_env with the local build reduced to pip's progress line and the verification
    to a recorder."""
    calls: Dict[str, Any] = {}

    def build(spec: Any, base: Any, prefix: Path, *, extra: Any, reporter: Any, wheel: Any) -> Path:
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "activate").write_text("")
        calls["base"] = base
        local_module.install_requirements(
            prefix / "bin" / "python3", prefix, spec, extra, wheel=None, reporter=reporter,
            where="Python 3.10",
        )  # fmt: skip
        return prefix

    def run(argv: Sequence[Any], reporter: Any, **kwargs: Any) -> None:
        calls["pip"] = Path(argv[argv.index("-r") + 1]).read_text().splitlines()

    def verify(archive: Path, xy: str, **kwargs: Any) -> VerifyReport:
        calls["verify"] = kwargs
        return VerifyReport(xy, "/env", "/env/lib/libpython3.10.so.1.0")

    monkeypatch.setattr(pack_module, "build_local_env", build)
    monkeypatch.setattr(local_module, "run_command", run)
    monkeypatch.setattr(pack_module, "verify_archive", verify)
    return calls


def test_pack_env_neither_lists_nor_verifies_a_false_marker_line(
    tmp_path: Path, recorded: Dict[str, Any]
) -> None:
    spec = 'numpy<2\nfoo; python_version < "3.9"\npywin32; sys_platform == "win32"\n'
    notes = Notes()
    result = pack_module.pack_env(
        _model(tmp_path, spec), python="3.10", builder="local", stub="never", reporter=notes
    )
    full = recorded["base"].version  # the local CPython 3.10 the environment is copied from
    target = f"Python 3.10 ({full}, Linux {MACHINE})"
    installing = [s for s in notes.steps if s.startswith("installing ")]
    assert installing == ["installing numpy, tritonpy with pip"]  # (the running tritonpy's
    # wheel may be built first: its step comes before, when tritonpy's files changed)
    assert recorded["pip"][:3] == spec.splitlines()  # pip still reads (and skips) them
    assert recorded["verify"]["distributions"] == ["numpy"]
    reasons = [
        f'foo: marker python_version < "3.9" is false for {target}',
        f'pywin32: marker sys_platform == "win32" is false for {target}',
    ]
    assert result.marker_skipped == reasons
    tail = "; pip skips that line there, so it is neither listed nor verified"
    assert [n for n in notes.notes if n.endswith(tail)] == [r + tail for r in reasons]


def test_a_numpy2_line_for_other_pythons_is_not_refused(
    tmp_path: Path, recorded: Dict[str, Any]
) -> None:
    spec = 'numpy<2; python_version < "3.13"\nnumpy>=2; python_version >= "3.13"\n'
    result = pack_module.pack_env(
        _model(tmp_path, spec), python="3.10", builder="local", stub="never"
    )
    assert recorded["verify"]["distributions"] == ["numpy"]
    assert result.marker_skipped == [
        f'numpy: marker python_version >= "3.13" is false for Python 3.10 '
        f"({recorded['base'].version}, Linux {MACHINE})"
    ]
    with pytest.raises(SpecError, match=r"the spec requires 'numpy>=2; python_version >= "):
        pack_module.pack_env(
            _model(tmp_path / "other", spec), python="3.13", builder="local", stub="never"
        )


def test_an_addition_with_a_false_marker_is_not_verified(
    tmp_path: Path, recorded: Dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    added = [
        Addition('pywin32>=306; sys_platform == "win32"', "a test"),
        Addition('tomli; python_version < "3.11"', "a test"),
    ]
    monkeypatch.setattr(pack_module, "plan_additions", lambda spec, scan: added)
    result = pack_module.pack_env(
        _model(tmp_path, "numpy<2\n"), python="3.10", builder="local", stub="never"
    )
    assert result.added == [a.requirement for a in added]  # pip gets them, markers and all
    assert recorded["verify"]["distributions"] == ["numpy", "tomli"]
