"""Native stubs of Triton r26.02 (the Ubuntu 24.04 / Python 3.12 container generation) built
from the source archives in ``<repo>/../shared/sources/triton-r26.02`` for Python 3.11 and 3.13,
cached by their build inputs like the r24.10 build of test_stub_native.py, then inspected and
placed by ``tritonpy stub`` and ``export_repository``.

They are built, linked and inspected here, never served: no tritonserver of release 26.02 can be
installed on this machine (the nvidia-pytriton wheel bundles 24.10, and a 26.02 stub speaks to
its own release's python backend only). Serving is proven for r24.10 in test_stub_native.py.

The build needs CMake >= 3.31.8 (python_backend r26.02's CMakeLists): the dev extra installs
``cmake>=3.31.8,<4`` from PyPI beside the venv's interpreter, where tritonpy's ``find_cmake``
finds it. Cold, each build takes about two minutes on 2 cores (``--jobs`` = the cores this
process may use); afterwards the stub cache (the user's, kept between CI runs) answers at once.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, Set

import pytest

from tritonpy._tooling.elf import check_libpython, read_dynamic
from tritonpy._tooling.release_facts import API_ITERATOR_CANCEL, facts_for
from tritonpy.cli import main
from tritonpy.export import export_repository
from tritonpy.server import find_wheel_installation
from tritonpy.stubs._build import missing_build_packages
from tritonpy.stubs._cache import STUB_NAME, StubCache, machine_arch
from tritonpy.stubs._provision import StubResult, provision_stub

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOT = ROOT.parent / "shared" / "sources"  # holds triton-r24.10/ and triton-r26.02/
SOURCES = SOURCE_ROOT / "triton-r26.02"
SCRIPT = ROOT / "scripts" / "build_stub.sh"
RELEASE = "26.02"
PYTHONS = ("3.11", "3.13")
#: python_backend r26.02's commit, as the README beside the archives records it
PYTHON_BACKEND_COMMIT = "bfc93fa1d83af968ae4f871ba061cc4a3f90fd8f"


def _model(parent: Path, name: str) -> Path:
    model = parent / name
    model.mkdir(parents=True)
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    return model


def _cached(python: str) -> Path:
    """The stub the user's cache gives for (26.02, ``python``) without a key."""
    found = StubCache().get(RELEASE, python)
    assert found is not None, f"no r{RELEASE} py{python} stub in the cache"
    return found


def _strings(path: Path, shortest: int = 4) -> Set[str]:
    """The NUL-terminated printable strings of a binary (what ``strings`` shows)."""
    found: Set[str] = set()
    for chunk in path.read_bytes().split(b"\0"):
        if len(chunk) >= shortest and all(32 <= byte < 127 for byte in chunk):
            found.add(chunk.decode())
    return found


@pytest.fixture(scope="module")
def built(
    unavailable: Callable[[str], None], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Dict[str, StubResult]]:
    """Both stubs, provisioned natively through the user's cache (built once per input set)."""
    if not (SOURCES / "python_backend.tar.gz").is_file():
        unavailable(
            f"Triton r26.02 source archives not found in {SOURCES}: put python_backend, common, "
            "core, backend, pybind11 and dlpack .tar.gz there (git archive of the r26.02 "
            "branches; see docs/environments.md) to run the r26.02 native build"
        )
    for python in PYTHONS:
        message = missing_build_packages(SCRIPT, python=python, release=RELEASE, source_dir=SOURCES)
        assert message is None, message
    results: Dict[str, StubResult] = {}
    for python in PYTHONS:
        model = _model(tmp_path_factory.mktemp("r2602"), f"py{python.replace('.', '')}")
        began = time.monotonic()
        # the folder of releases, as $TRITONPY_STUB_SOURCE_DIR would name it: r26.02's is taken
        results[python] = provision_stub(
            model, triton_version=RELEASE, python=python, sources=("native",),
            cache=StubCache(), source_dir=SOURCE_ROOT,
        )  # fmt: skip
        seconds = time.monotonic() - began
        how = "cached" if results[python].cached else "built"
        print(f"\nnative stub r{RELEASE} py{python}: {seconds:.1f} s ({how})")
    yield results


@pytest.mark.parametrize("python", PYTHONS)
def test_r2602_stub_links_its_python_and_records_its_release(
    built: Dict[str, StubResult], python: str
) -> None:
    result = built[python]
    assert (result.source, result.release, result.python) == ("native", RELEASE, python)
    info = check_libpython(result.path, python)
    assert info.libpythons == [f"libpython{python}.so.1.0"]
    assert info.machine == machine_arch() == result.arch
    assert info.runpath is None and info.rpath is None  # built with CMAKE_SKIP_RPATH
    assert {"libstdc++.so.6", "libc.so.6"} <= set(read_dynamic(result.path).needed)

    meta = StubCache().metadata(RELEASE, python, key=result.key)
    assert (meta["release"], meta["python"], meta["source"]) == (RELEASE, python, "native")
    inputs = meta["inputs"]
    assert inputs["release"] == RELEASE and inputs["python"].startswith(python + ".")
    assert "-DTRITON_CORE_REPO_TAG=r26.02" in inputs["flags"]
    version = tuple(int(part) for part in inputs["cmake"].split("."))
    assert version >= facts_for(RELEASE).min_cmake == (3, 31, 8)
    archive = SOURCES / "python_backend.tar.gz"
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert inputs["python_backend"] == f"archive:{digest}"
    # the archive is python_backend r26.02 itself: git archive records its commit
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(archive.read_bytes()))) as tar:
        assert tar.pax_headers.get("comment") == PYTHON_BACKEND_COMMIT


def test_r2602_binary_has_the_iterator_cancel_of_its_release(built: Dict[str, StubResult]) -> None:
    """The binary says nothing of its release (no version string), but its Python module does:
    ``ResponseIterator.cancel`` is bound from r25.04 on (``.def("cancel", ...)`` in pb_stub.cc),
    which the release table records, and the wheel's r24.10 stub has no such name."""
    assert facts_for(RELEASE).has_api(API_ITERATOR_CANCEL)
    assert not facts_for("24.10").has_api(API_ITERATOR_CANCEL)
    for python in PYTHONS:
        assert "cancel" in _strings(built[python].path), python
    assert "cancel" not in _strings(find_wheel_installation().stub("3.11"))


def test_tritonpy_stub_places_the_cached_r2602_build(
    built: Dict[str, StubResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path, "cli")
    began = time.monotonic()
    argv = ["stub", str(model), "--triton-version", RELEASE, "--python", "3.11"]
    code = main([*argv, "--source", "native", "--source-dir", str(SOURCE_ROOT)])
    assert code == 0 and time.monotonic() - began < 60  # the cache answers: nothing rebuilt
    printed = capsys.readouterr().out
    assert f"(Python 3.11, r{RELEASE}, {machine_arch()}, from native, cached)" in printed
    assert (model / STUB_NAME).read_bytes() == built["3.11"].path.read_bytes()
    # and without naming a source: the cache's r26.02 entry, never the wheel's 24.10 stubs
    assert main([*argv]) == 0
    assert "from cache)" in capsys.readouterr().out
    assert (model / STUB_NAME).read_bytes() == _cached("3.11").read_bytes()
    assert "cancel" in _strings(model / STUB_NAME)


def _env_archive(path: Path, python: str) -> Path:
    """A minimal conda-pack-like environment archive for ``python`` (its libpython named)."""
    members = {
        "./bin/activate": b"# activate\n",
        f"./lib/libpython{python}.so.1.0": b"",
        f"./lib/python{python}/site-packages/numpy-1.26.4.dist-info/METADATA": b"Name: numpy\n",
    }
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


MODEL = """import tritonpy as tp


class Double(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, X):
        return {"Y": X * 2}


TritonPythonModel = Double
"""


def test_export_for_2602_places_the_r2602_stub_for_a_311_environment(
    built: Dict[str, StubResult], tmp_path: Path
) -> None:
    assert facts_for(RELEASE).python != "3.11"  # so the export needs a stub of its own
    model = tmp_path / "repo" / "double"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    _env_archive(model / "env.tar.gz", "3.11")
    (model / "config.pbtxt").write_text(
        'name: "double"\nbackend: "python"\nparameters { key: "EXECUTION_ENV_PATH" value { '
        'string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }\n'
    )
    result = export_repository(tmp_path / "repo", tmp_path / "deploy", triton_version=RELEASE)
    double = result.models[0]
    assert (double.environment, double.python, double.stub) == ("kept", "3.11", "cache")
    stub = tmp_path / "deploy" / "model_repository" / "double" / STUB_NAME
    assert stub.read_bytes() == _cached("3.11").read_bytes()
    assert check_libpython(stub, "3.11").libpythons == ["libpython3.11.so.1.0"]
    assert "cancel" in _strings(stub)  # r26.02's, not a 24.10 stub
