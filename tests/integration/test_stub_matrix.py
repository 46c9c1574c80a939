"""The stub matrix: for each of pyenv's Pythons 3.9, 3.10, 3.12 and 3.13, ``pack_env`` builds the
model's environment and places the stub for that Python; ONE local tritonserver (its serving
Python is this interpreter's, 3.11) loads all four models from one repository, and each model
answers from its own interpreter: ``sys.version_info``, ``sys.prefix`` (the unpacked archive,
not pyenv's installation nor this virtualenv) and numpy below 2, as release 24.10 needs.

The stub each model gets is the one ``pack_env`` provisions: the nvidia-pytriton wheel's
prebuilt stub for 3.9, 3.10 and 3.12; for 3.13 the wheel's stub needs the wheel's own grafted
``libpython3-419a3a08.13.so.1.0`` (refused: a Triton container has no such library), so it is a
native build from Triton's r24.10 source archives in ``<repo>/../shared/sources/triton-r24.10``
(``$TRITONPY_STUB_SOURCE_DIR``), cached in the user's stub cache after the first build.

The repository lives in pytest's cache directory: an unchanged spec, Python, release and
tritonpy skip the rebuild (``pack_env``'s build record), so only the first run on a machine and
runs after a tritonpy change pay for the builds (about 25 s per Python on 2 cores; numpy<2 has
no wheel for 3.13, so the first 3.13 build compiles numpy 1.26.4, which pip then caches).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy._tooling.elf import check_libpython
from tritonpy._tooling.installation import find_wheel_installation
from tritonpy.check._stubinfo import stub_release
from tritonpy.envs import EnvError, pack_env
from tritonpy.envs._interpreters import find_interpreter
from tritonpy.stubs._build import missing_build_packages
from tritonpy.stubs._cache import STUB_NAME

pytestmark = pytest.mark.integration

PYTHONS = ("3.9", "3.10", "3.12", "3.13")
#: the Pythons whose wheel stub links a plain libpython3.X.so.1.0 (3.13's needs a grafted one)
WHEEL_STUB_PYTHONS = ("3.9", "3.10", "3.12")
ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT.parent / "shared" / "sources" / "triton-r24.10"
SCRIPT = ROOT / "scripts" / "build_stub.sh"

MODEL = """
import json
import sys

import numpy as np

import tritonpy as tp


class WhichPython(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"INFO": tp.Text(), "SUM": tp.Tensor("FP32", [1])}
    max_batch_size = 4

    def infer(self, X):
        info = {
            "version_info": list(sys.version_info[:3]),
            "prefix": sys.prefix,
            "executable": sys.executable,
            "numpy": np.__version__,
        }
        return {
            "INFO": [json.dumps(info)] * X.shape[0],
            "SUM": X.sum(axis=1, keepdims=True),
        }


TritonPythonModel = WhichPython
"""


@dataclass
class Packed:
    """One model of the matrix: what pack_env did, or why it could not."""

    python: str
    model: str
    seconds: float = 0.0
    skipped: bool = False
    stub_source: Optional[str] = None
    missing: Optional[str] = None  # no such interpreter here (the reason for the skip)


def _model_name(python: str) -> str:
    return "py" + python.replace(".", "")


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _native_build_missing(python: str) -> Optional[str]:
    """Why a native stub build cannot run here (None: it can). Missing Debian packages are
    installed when running as root, as the native build test does."""
    if not (SOURCES / "python_backend.tar.gz").is_file():
        return (
            f"Triton r24.10 source archives not found in {SOURCES} (the 3.13 stub is a native "
            "build; see docs/environments.md for the archives it needs)"
        )
    message = missing_build_packages(SCRIPT, python=python, release="24.10", source_dir=SOURCES)
    if not message:
        return None
    apt = next((ln.strip() for ln in message.splitlines() if ln.strip().startswith("apt-get ")), "")
    if not apt or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"the native stub build needs packages this machine lacks; as root: {apt}"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(apt.split(), capture_output=True, env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env)
        subprocess.run(apt.split(), capture_output=True, env=env)
    return missing_build_packages(SCRIPT, python=python, release="24.10", source_dir=SOURCES)


def _pack(repo: Path, python: str, serving: str) -> Packed:
    name = _model_name(python)
    try:
        find_interpreter(python)
    except EnvError as exc:
        return Packed(python, name, missing=f"no local CPython {python}: {exc}")
    if python not in WHEEL_STUB_PYTHONS:
        why = _native_build_missing(python)
        if why:
            return Packed(python, name, missing=why)
    model = repo / name
    (model / "1").mkdir(parents=True, exist_ok=True)
    _write_if_changed(model / "1" / "model.py", MODEL)
    if not (model / "config.pbtxt").is_file():
        (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    _write_if_changed(model / "requirements.txt", "numpy<2\n")
    began = time.monotonic()
    result = pack_env(
        model, python=python, builder="local", server_python=serving, compress_level=1
    )
    assert result.stub is not None, f"no stub placed for Python {python}"
    return Packed(python, name, time.monotonic() - began, result.skipped, result.stub.source)


@pytest.fixture(scope="module")
def stub_sources() -> Iterator[None]:
    """Native builds (3.13) read the r24.10 archives through $TRITONPY_STUB_SOURCE_DIR."""
    previous = os.environ.get("TRITONPY_STUB_SOURCE_DIR")
    os.environ["TRITONPY_STUB_SOURCE_DIR"] = str(SOURCES)
    yield
    if previous is None:
        os.environ.pop("TRITONPY_STUB_SOURCE_DIR", None)
    else:
        os.environ["TRITONPY_STUB_SOURCE_DIR"] = previous


@pytest.fixture(scope="module")
def matrix(
    stub_sources: None, request: pytest.FixtureRequest, triton_server_factory: Callable[..., Any]
) -> Dict[str, Any]:
    serving = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert serving not in PYTHONS, "the matrix needs a server Python outside the matrix"
    # pytest's cache directory keeps the archives and their build records between runs
    repo = Path(request.config.cache.mkdir("tritonpy-stub-matrix")) / "repo"
    repo.mkdir(exist_ok=True)
    packed = {python: _pack(repo, python, serving) for python in PYTHONS}
    for entry in repo.iterdir():
        if entry.is_dir() and entry.name not in {p.model for p in packed.values()}:
            raise AssertionError(f"unexpected model directory {entry} in the matrix repository")
    began = time.monotonic()
    server = triton_server_factory(repo, startup_timeout=240)
    started = time.monotonic() - began
    ready = server.models_ready()
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    return {"packed": packed, "client": client, "ready": ready, "start": started, "repo": repo}


@pytest.mark.parametrize("python", PYTHONS)
def test_model_answers_from_its_own_python(
    python: str, matrix: Dict[str, Any], unavailable: Callable[[str], None]
) -> None:
    packed: Packed = matrix["packed"][python]
    if packed.missing:
        unavailable(f"{packed.missing} (install it with 'pyenv install {python}')")
    model = matrix["repo"] / packed.model
    # the right stub: linking this Python's plain libpython, from release 24.10 (what
    # `tritonpy check` TP513 reads); the wheel's prebuilt one or an r24.10 native build from
    # the cache for 3.9-3.12, a native build for 3.13 (the wheel's needs a grafted libpython)
    info = check_libpython(model / STUB_NAME, python)
    assert info.libpythons == [f"libpython{python}.so.1.0"]
    origin = stub_release(model / STUB_NAME)
    assert origin.release == "24.10", origin
    wheel_bytes = find_wheel_installation().stub(python).read_bytes()
    if python in WHEEL_STUB_PYTHONS:
        assert packed.stub_source in ("wheel", "cache"), packed.stub_source
    else:
        assert packed.stub_source in ("native", "cache"), packed.stub_source
        assert (model / STUB_NAME).read_bytes() != wheel_bytes
    assert packed.model in matrix["ready"]

    x = np.array([[1.0, 2.0, 3.5]], np.float32)
    inp = httpclient.InferInput("X", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    answer = matrix["client"].infer(packed.model, [inp])
    info = json.loads(answer.as_numpy("INFO").reshape(-1)[0])
    # the matrix row (shown with -s): Python, stub, what the model reported, pack-env time
    print(
        f"\nmatrix {python}: stub {packed.stub_source} ({origin.how}); reported "
        f"{json.dumps(info)}; pack-env {packed.seconds:.1f} s"
        f"{' (up to date)' if packed.skipped else ''}; server start {matrix['start']:.1f} s"
    )
    assert info["version_info"][:2] == [int(p) for p in python.split(".")], info
    # the interpreter runs from the unpacked archive, not pyenv's tree nor this virtualenv
    assert ".pyenv" not in info["prefix"] and info["prefix"] != sys.prefix, info
    assert int(info["numpy"].split(".")[0]) < 2, info
    assert answer.as_numpy("SUM").tolist() == [[6.5]]
