"""The import check's name mapping (tritonpy/envs/_envcheck.py): which modules prove that a
distribution is installed, read from its installed metadata. On this interpreter's real
distributions, and on fake site-packages folders (the layouts of scikit-learn, beautifulsoup4,
protobuf, ... written from their RECORDs) under pyenv's Python 3.8, 3.9 and 3.10 (no
packages_distributions before 3.10) and this one."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from tritonpy.envs import _envcheck
from tritonpy.envs._interpreters import find_interpreter
from tritonpy.envs._verify import _CHECK, _MARK, _unfound_messages


@pytest.mark.parametrize(
    ("dist", "modules"),
    [
        ("scikit-learn", ["sklearn"]),  # no top_level.txt; RECORD has scikit_learn.libs/
        ("opencv-python-headless", ["cv2"]),  # opencv_python_headless.libs/ beside cv2/
        ("Pillow", ["PIL"]),
        ("PyYAML", ["yaml"]),  # top_level.txt: _yaml and yaml (the private one is left out)
        ("protobuf", ["google.protobuf"]),  # google/ is a namespace package
        ("numpy", ["numpy"]),
        ("types-PyYAML", []),  # only yaml-stubs/: nothing importable
    ],
)
def test_real_distributions_of_this_interpreter(dist: str, modules: List[str]) -> None:
    assert _envcheck.import_names(metadata.distribution(dist)) == modules


def test_scikit_learn_really_lacks_top_level_txt_and_has_a_libs_folder() -> None:
    # what made the old check import 'scikit_learn': keep the test honest about the layout
    dist = metadata.distribution("scikit-learn")
    assert dist.read_text("top_level.txt") is None
    assert any(f.parts[0] == "scikit_learn.libs" for f in dist.files or [])


# ------------------------------------------------------------------ fake site-packages folders
def _dist(
    site: Path,
    name: str,
    files: Dict[str, bytes],
    *,
    top_level: Optional[str] = None,
    record: bool = True,
    egg: bool = False,
) -> None:
    """Install a fake distribution ``name`` 1.0 into ``site``: ``files`` (relative paths ->
    content) written, listed in RECORD (unless ``record`` is False)."""
    info = site / (f"{name.replace('-', '_')}-1.0." + ("egg-info" if egg else "dist-info"))
    info.mkdir(parents=True)
    (info / ("PKG-INFO" if egg else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    )
    if top_level is not None:
        (info / "top_level.txt").write_text(top_level)
    for relative, content in files.items():
        path = (site / relative).resolve()
        if site.resolve() in path.parents:  # ../../bin/x is listed, not written
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    if record and not egg:
        listed = [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]
        (info / "RECORD").write_text("".join(f"{p},,\n" for p in listed))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    _dist(  # scikit-learn's layout: no top_level.txt, bundled libraries in scikit_learn.libs/
        site,
        "scikit-learn",
        {
            "sklearn/__init__.py": b"",
            "sklearn/linear_model/__init__.py": b"",
            "sklearn/__pycache__/__init__.cpython-38.pyc": b"",
            "scikit_learn.libs/libgomp-a34b3233.so.1.0.0": b"\x7fELF",
            "scikit_learn-1.0.dist-info/WHEEL": b"",
        },
    )
    _dist(site, "beautifulsoup4", {"bs4/__init__.py": b"", "bs4/tests/__init__.py": b""})
    _dist(  # protobuf's: google/ has no __init__.py; google/_upb is private
        site,
        "protobuf",
        {
            "google/protobuf/__init__.py": b"",
            "google/protobuf/json_format.py": b"",
            "google/_upb/_message.abi3.so": b"",
        },
    )
    _dist(  # a module, its bytecode, .pth, .data and .egg-info folders, a script in bin/
        site,
        "six",
        {
            "six.py": b"",
            "__pycache__/six.cpython-38.pyc": b"",
            "six-extra.pth": b"",
            "six-1.0.data/scripts/tool": b"",
            "six-0.9.egg-info/PKG-INFO": b"",
            "../../bin/six-tool": b"",
            "tests/__init__.py": b"",
        },
    )
    _dist(  # a plain shared library at top level (no PyInit_) and a real extension module
        site,
        "native-bits",
        {
            "libnative.so": b"\x7fELF...plain library",
            "fastext.so": b"\x7fELF...PyInit_fastext\0...",
        },
    )
    _dist(site, "legacy", {}, top_level="legacy_mod\n", egg=True)  # no RECORD: the name as is
    (site / "legacy_mod.py").write_text("")
    _dist(site, "ghost", {}, top_level="ghost_module\n")  # names a module that is not there
    _dist(  # exists but fails to import: a missing system library (a real failure)
        site,
        "brokenlib",
        {
            "brokenlib/__init__.py": b"raise ImportError("
            b"'libbroken.so.1: cannot open shared object file: No such file or directory')\n"
        },
    )
    _dist(site, "needsdep", {"needsdep/__init__.py": b"import not_installed_dependency_xyz\n"})
    return site


EXPECTED = {
    "scikit-learn": ["sklearn"],
    "beautifulsoup4": ["bs4"],
    "protobuf": ["google.protobuf"],
    "six": ["six"],
    "native-bits": ["fastext"],
    "legacy": ["legacy_mod"],
    "ghost": ["ghost_module"],
    "brokenlib": ["brokenlib"],
    "needsdep": ["needsdep"],
}

# runs the check's own source as `python -I -c` does, with the fake site folder on sys.path
RUNNER = (
    "import sys; site, script = sys.argv[1:3]; del sys.argv[1:3]; sys.path.insert(0, site); "
    "exec(compile(open(script).read(), script, 'exec'))"
)


def _run_check(python: str, site: Path, tmp_path: Path, **arguments: Any) -> Dict[str, Any]:
    script = tmp_path / "check.py"
    script.write_text(_CHECK)
    args = {"distributions": list(EXPECTED), "skip": [], "model": None, "codecs": [], **arguments}
    done = subprocess.run(
        [python, "-I", "-c", RUNNER, str(site), str(script), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(_MARK)]
    assert done.returncode == 0 and lines, done.stderr
    result: Dict[str, Any] = json.loads(lines[-1][len(_MARK) :])
    return result


def _python(xy: str) -> str:
    if xy == "this":
        return sys.executable
    return str(find_interpreter(xy).executable)


@pytest.mark.parametrize("xy", ["3.8", "3.9", "3.10", "this"])
def test_names_and_imports_under_each_python(xy: str, site: Path, tmp_path: Path) -> None:
    result = _run_check(_python(xy), site, tmp_path)
    if xy != "this":
        assert result["version"] == xy
    assert result["names"] == EXPECTED
    imported = set(result["modules"])
    assert {"sklearn", "bs4", "google.protobuf", "six", "legacy_mod"} <= imported
    assert not imported & {"scikit_learn", "google", "libnative", "tests", "__pycache__"}
    # guessed names that do not exist are told apart from modules that fail to import
    assert sorted(map(tuple, result["unfound"])) == [("ghost", "ghost_module")]
    failed = [e.splitlines()[0] for e in result["errors"] if not e.startswith("import tritonpy")]
    assert failed == [
        "import fastext failed:",
        "import brokenlib failed:",
        "import needsdep failed:",
    ]
    assert "libbroken.so.1: cannot open shared object file" in "".join(result["errors"])
    assert "not_installed_dependency_xyz" in "".join(result["errors"])


def test_skipped_distributions_are_not_looked_at(site: Path, tmp_path: Path) -> None:
    skip = ["Ghost", "brokenlib", "native_bits", "needsdep"]  # any spelling of the name
    result = _run_check(sys.executable, site, tmp_path, skip=skip)
    assert set(result["names"]) == {"scikit-learn", "beautifulsoup4", "protobuf", "six", "legacy"}
    assert result["unfound"] == []
    assert [e for e in result["errors"] if not e.startswith("import tritonpy")] == []


def test_a_distribution_that_is_not_installed_is_an_error(site: Path, tmp_path: Path) -> None:
    result = _run_check(sys.executable, site, tmp_path, distributions=["no-such-dist-xyz"])
    assert result["names"] == {}
    assert result["errors"][0].startswith("distribution no-such-dist-xyz is not installed")


# ------------------------------------------------------- a guessed module that is not there
def _result(model: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "unfound": [["ghost", "ghost_module"]],
        "names": {"ghost": ["ghost_module"]},
        "model": model,
    }


def test_unfound_module_is_a_warning_when_the_model_imports() -> None:
    model = {"missing": [], "error": "", "codecs": []}
    problems, warnings = _unfound_messages(_result(model), Path("m/1/model.py"))
    assert problems == []
    assert warnings == [
        "distribution ghost: no module 'ghost_module' in the environment (the modules read "
        "from its installed metadata: 'ghost_module'); m/1/model.py imported fine there, so "
        "this is not a failure"
    ]


@pytest.mark.parametrize(
    "model",
    [None, {"missing": [["sklearn", ""]], "error": "", "codecs": []}],
    ids=["no model file", "model fails to import"],
)
def test_unfound_module_fails_without_a_model_that_imports(model: Optional[Dict[str, Any]]) -> None:
    problems, warnings = _unfound_messages(_result(model), Path("m/1/model.py") if model else None)
    assert warnings == []
    assert len(problems) == 1
    assert problems[0].startswith("distribution ghost: no module 'ghost_module' in the environment")
    assert problems[0].endswith(
        "skip its import check with --skip-import-check ghost (PackOptions.skip_import_check)"
    )
