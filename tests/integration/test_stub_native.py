"""A real native stub build: Triton r24.10's python_backend compiled from the source archives
in ``<repo>/../shared/sources/triton-r24.10`` for Python 3.10, cached by its build inputs, and
proven in the real tritonserver (3.11) by a model that reports its interpreter.

Cold, the build takes a few minutes on 2 cores; afterwards the stub cache (the user's, so CI
machines keep it between runs) answers in seconds, which the second provisioning asserts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy._tooling.elf import ElfError, check_libpython
from tritonpy.envs import pack_env
from tritonpy.server import find_wheel_installation
from tritonpy.stubs._build import missing_build_packages
from tritonpy.stubs._cache import STUB_NAME, StubCache
from tritonpy.stubs._provision import StubError, StubResult, provision_stub

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT.parent / "shared" / "sources" / "triton-r24.10"
SCRIPT = ROOT / "scripts" / "build_stub.sh"
PYTHON = "3.10"

MODEL = """
import sys

import numpy as np

import tritonpy as tp


class WhichPython(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"VERSION": tp.Text(), "PREFIX": tp.Text(), "SUM": tp.Tensor("FP32", [1])}
    max_batch_size = 4

    def infer(self, X):
        rows = X.shape[0]
        version = "%d.%d.%d" % sys.version_info[:3]
        return {
            "VERSION": [version] * rows,
            "PREFIX": [sys.prefix + " numpy " + np.__version__] * rows,
            "SUM": X.sum(axis=1, keepdims=True),
        }


TritonPythonModel = WhichPython
"""


def _install_build_packages(message: str, unavailable: Callable[[str], None]) -> None:
    """Install what ``build_stub.sh --check-deps`` named, as root; skip saying why otherwise."""
    apt_line = next(
        (line.strip() for line in message.splitlines() if line.strip().startswith("apt-get ")),
        "",
    )
    if not apt_line:
        pytest.fail(f"build_stub.sh named no apt-get line:\n{message}")
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        unavailable(
            "the native stub build needs packages this machine lacks and the test is not root "
            f"(or has no apt-get) to install them; run as root:\n  {apt_line}\n{message}"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    packages = apt_line.split()
    done = subprocess.run(packages, capture_output=True, text=True, env=env)
    if done.returncode != 0:  # stale package lists: refresh once
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, check=False)
        done = subprocess.run(packages, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{apt_line} failed:\n{done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def build_ready(unavailable: Callable[[str], None]) -> Iterator[None]:
    if not (SOURCES / "python_backend.tar.gz").is_file():
        unavailable(
            f"Triton r24.10 source archives not found in {SOURCES}: put python_backend, common, "
            "core, backend, pybind11 and dlpack .tar.gz there (git archive of the r24.10 "
            "branches; see docs/environments.md) to run the native build"
        )
    message = missing_build_packages(SCRIPT, python=PYTHON, release="24.10", source_dir=SOURCES)
    if message:
        _install_build_packages(message, unavailable)
        again = missing_build_packages(SCRIPT, python=PYTHON, release="24.10", source_dir=SOURCES)
        assert again is None, again
    yield


def _model(parent: Path, name: str) -> Path:
    model = parent / name
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("numpy<2\n")
    return model


def _native(model: Path, cache: StubCache) -> StubResult:
    return provision_stub(
        model,
        triton_version="24.10",
        python=PYTHON,
        sources=("native",),
        cache=cache,
        source_dir=SOURCES,
    )


def test_native_stub_serves_a_310_environment(
    build_ready: None,
    tmp_path: Path,
    triton_server_factory: Callable[..., Any],
    record_property: Callable[[str, object], None],
) -> None:
    serving = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert serving != PYTHON, "the proof needs a server Python other than the stub's"
    cache = StubCache()  # the user's cache: a CI machine builds once, then hits it
    repo = tmp_path / "repo"
    model = _model(repo, "native310")

    began = time.monotonic()
    first = _native(model, cache)
    first_seconds = time.monotonic() - began
    assert first.source == "native" and first.key.startswith("native-")
    info = check_libpython(model / STUB_NAME, PYTHON)
    assert info.libpythons == ["libpython3.10.so.1.0"]
    # our own build, not a copy of the wheel's prebuilt stub
    wheel_bytes = find_wheel_installation().stub(PYTHON).read_bytes()
    assert (model / STUB_NAME).read_bytes() != wheel_bytes
    assert cache.metadata("24.10", PYTHON, key=first.key)["inputs"]["python_backend"].startswith(
        "archive:"
    )

    # a second model: same build inputs, so the cache answers and nothing is rebuilt
    began = time.monotonic()
    second = _native(_model(tmp_path / "other", "second"), cache)
    second_seconds = time.monotonic() - began
    assert second.cached and second.key == first.key
    assert second.path.read_bytes() == (model / STUB_NAME).read_bytes()
    record_property("native_stub_first_seconds", round(first_seconds, 1))
    record_property("native_stub_cached_seconds", round(second_seconds, 1))
    print(
        f"\nnative stub r24.10 py{PYTHON}: first {first_seconds:.1f} s "
        f"({'cached' if first.cached else 'built'}), second {second_seconds:.1f} s (cached)"
    )

    packed = pack_env(
        model,
        python=PYTHON,
        builder="local",
        server_python=serving,
        stub="never",
        compress_level=1,
    )
    assert packed.archive.name == f"native310_py{PYTHON}.tar.gz"
    assert (model / STUB_NAME).read_bytes() == second.path.read_bytes()  # pack-env kept ours

    server = triton_server_factory(repo, startup_timeout=180)
    assert server.models_ready() == ["native310"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    x = np.array([[1.0, 2.0, 3.5]], np.float32)
    inp = httpclient.InferInput("X", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    answer = client.infer("native310", [inp])
    version = answer.as_numpy("VERSION").reshape(-1)[0].decode()
    prefix = answer.as_numpy("PREFIX").reshape(-1)[0].decode()
    assert version.startswith(PYTHON + "."), version
    assert ".pyenv" not in prefix and " numpy 1." in prefix, prefix  # the unpacked archive's
    assert answer.as_numpy("SUM").tolist() == [[6.5]]

    # the built stub is refused for any other Python
    with pytest.raises(
        ElfError, match=r"needs libpython3.10.so.1.0; expected exactly libpython3.12"
    ):
        check_libpython(second.path, "3.12")


def test_native_build_for_the_wrong_interpreter_is_refused(
    build_ready: None, tmp_path: Path
) -> None:
    interpreter = next(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.10.*/bin/python3.10"))
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    with pytest.raises(StubError) as caught:
        provision_stub(
            model,
            triton_version="24.10",
            python="3.12",
            sources=("native",),
            cache=StubCache(tmp_path / "cache"),
            source_dir=SOURCES,
            python_path=interpreter,
        )
    message = str(caught.value)
    assert "native: " in message and "no working Python 3.12 found" in message
    assert f"({interpreter} is Python 3.10)" in message
    assert not (model / STUB_NAME).exists()
