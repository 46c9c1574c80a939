"""The proof: a model packed with a Python 3.10 environment (pyenv's CPython, numpy<2,
tritonpy) and the 3.10 stub from the wheel runs under Python 3.10 *from the archive* in the real
tritonserver, whose own serving interpreter is this one (3.11). And a scikit-learn model (a
distribution whose import name, sklearn, is not its name) packed through a nested requirements
file passes verification and serves; a change of that nested file rebuilds, the CLI's
--skip-import-check skips a distribution and a guessed module that does not exist is a warning
when the model imports."""

from __future__ import annotations

import base64
import hashlib
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy import cli
from tritonpy._tooling.elf import check_libpython
from tritonpy.envs import PackResult, Reporter, pack_env
from tritonpy.envs import _pack as pack_module
from tritonpy.envs._selfwheel import RunningTritonpy
from tritonpy.stubs._cache import STUB_NAME

pytestmark = pytest.mark.integration

MODEL = """
import sys

import numpy as np

import tritonpy as tp


class PythonVersion(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"VERSION": tp.Text(), "PREFIX": tp.Text(), "SUM": tp.Tensor("FP32", [1])}
    max_batch_size = 8

    def infer(self, X):
        rows = X.shape[0]
        return {
            "VERSION": [sys.version.split()[0]] * rows,
            "PREFIX": [sys.prefix + " numpy " + np.__version__] * rows,
            "SUM": X.sum(axis=1, keepdims=True),
        }


TritonPythonModel = PythonVersion
"""


def test_model_runs_under_the_packed_python(
    tmp_path: Path, triton_server_factory: Callable[..., Any]
) -> None:
    serving = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert serving != "3.10", "the proof needs a server Python other than the env's"
    model = tmp_path / "repo" / "pyversion"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "config.pbtxt").write_text('name: "pyversion"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("numpy<2\n")

    result = pack_env(
        model, python="3.10", builder="local", server_python=serving, compress_level=1
    )
    assert result.archive.name == "pyversion_py3.10.tar.gz"
    assert result.stub is not None and result.stub.source in ("wheel", "cache")
    check_libpython(model / STUB_NAME, "3.10")

    server = triton_server_factory(tmp_path / "repo", startup_timeout=180)
    assert server.models_ready() == ["pyversion"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    x = np.array([[1.0, 2.0, 3.5]], np.float32)
    inp = httpclient.InferInput("X", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    answer = client.infer("pyversion", [inp])
    version = answer.as_numpy("VERSION").reshape(-1)[0].decode()
    prefix = answer.as_numpy("PREFIX").reshape(-1)[0].decode()
    assert version.startswith("3.10."), version
    assert ".pyenv" not in prefix and "numpy 1." in prefix, prefix  # the unpacked archive's
    assert answer.as_numpy("SUM").tolist() == [[6.5]]


# ------------------------------------------- scikit-learn: import names from the metadata
# scikit-learn is the distribution of issue 27: no top_level.txt, its bundled libraries in
# scikit_learn.libs/, the module 'sklearn'. The real one from the package index (1.7.x for
# Python 3.10), through a nested requirements file, verified, then served.
SERVING = f"{sys.version_info[0]}.{sys.version_info[1]}"
SKLEARN_MODEL = """
import numpy as np
import sklearn
from sklearn.preprocessing import StandardScaler

import tritonpy as tp


class Scale(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1]), "WHERE": tp.Text()}
    max_batch_size = 4

    def infer(self, X):
        scaled = StandardScaler().fit_transform(X.T).T.astype(np.float32)
        return {"Y": scaled, "WHERE": [sklearn.__file__] * X.shape[0]}


TritonPythonModel = Scale
"""


class Steps(Reporter):
    def __init__(self) -> None:
        self.lines: List[str] = []

    def start(self, step: str) -> None:
        self.lines.append(step)

    def note(self, message: str) -> None:
        self.lines.append(message)


def _guessing_wheel(folder: Path) -> Path:
    """A wheel whose top_level.txt names a module it does not install (a stale metadata
    file): its module is tinyguess_real, its top_level.txt says tinyguess_gone."""
    info = "tinyguess-1.0.dist-info"
    files = {
        "tinyguess_real/__init__.py": b"VALUE = 1\n",
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: tinyguess\nVersion: 1.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{info}/top_level.txt": b"tinyguess_gone\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    path = folder / "tinyguess-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


@pytest.fixture(scope="module")
def frozen_tritonpy() -> RunningTritonpy:
    """The running tritonpy as it is now. The rebuild key hashes tritonpy's own files: where
    they change under the test (a shared checkout being edited), a pack would rebuild for
    that reason alone; the tests of the key hold this identity fixed."""
    return pack_module.running_tritonpy()


@pytest.fixture(scope="module")
def sklearn_model(
    tmp_path_factory: pytest.TempPathFactory, frozen_tritonpy: RunningTritonpy
) -> Tuple[Path, PackResult, Steps]:
    model = tmp_path_factory.mktemp("sk") / "repo" / "scale"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(SKLEARN_MODEL)
    (model / "config.pbtxt").write_text('name: "scale"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("-r pins/base.txt\n")
    (model / "pins").mkdir()
    (model / "pins" / "base.txt").write_text("numpy<2\nscikit-learn\n")
    steps = Steps()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pack_module, "running_tritonpy", lambda: frozen_tritonpy)
        result = pack_env(
            model, python="3.10", builder="local", server_python=SERVING, compress_level=1,
            reporter=steps,
        )  # fmt: skip
    return model, result, steps


def test_scikit_learn_passes_verification_as_sklearn(
    sklearn_model: Tuple[Path, PackResult, Steps],
) -> None:
    _, result, steps = sklearn_model
    assert "installing numpy, scikit-learn with pip" in steps.lines  # from the nested file
    assert result.verify is not None
    assert result.verify.import_names["scikit-learn"] == ["sklearn"]
    assert "/lib/python3.10/site-packages/sklearn/" in result.verify.modules["sklearn"]
    assert "scikit_learn" not in result.verify.modules and result.verify.warnings == []
    with tarfile.open(result.archive) as tar:  # the very layout that broke the old check
        names = tar.getnames()
    site = "lib/python3.10/site-packages/"
    assert any(n.startswith(f"{site}scikit_learn.libs/") for n in names)
    info = [n for n in names if n.startswith(f"{site}scikit_learn-") and n.endswith("RECORD")]
    assert info and not any(n.endswith("top_level.txt") and "scikit_learn-" in n for n in names)


def test_scikit_learn_model_serves_from_its_archive(
    sklearn_model: Tuple[Path, PackResult, Steps], triton_server_factory: Callable[..., Any]
) -> None:
    model, _, _ = sklearn_model
    server = triton_server_factory(model.parent, startup_timeout=180)
    assert server.models_ready() == ["scale"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    inp = httpclient.InferInput("X", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    answer = client.infer("scale", [inp])
    np.testing.assert_allclose(answer.as_numpy("Y"), [[-1.2247449, 0.0, 1.2247449]], rtol=1e-5)
    where = answer.as_numpy("WHERE").reshape(-1)[0].decode()
    assert "/lib/python3.10/site-packages/sklearn/" in where and ".pyenv" not in where


def test_nested_change_rebuilds_skip_flag_and_warning_through_the_cli(
    sklearn_model: Tuple[Path, PackResult, Steps],
    frozen_tritonpy: RunningTritonpy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model, _, _ = sklearn_model
    monkeypatch.setattr(pack_module, "running_tritonpy", lambda: frozen_tritonpy)
    argv = ["pack-env", str(model), "--python", "3.10", "--builder", "local"]
    argv += ["--server-python", SERVING, "--compress-level", "1"]
    assert cli.main(argv) == 0
    assert "Python 3.10, unchanged" in capsys.readouterr().out
    wheel = _guessing_wheel(tmp_path)
    with open(model / "pins" / "base.txt", "a") as base:  # only the NESTED file changes
        base.write(f"tinyguess @ {wheel.as_uri()}\n")
    assert cli.main([*argv, "--skip-import-check", "scikit-learn"]) == 0
    shown = capsys.readouterr()
    assert "Python 3.10, built with local" in shown.out
    err = " ".join(shown.err.split())  # rich wraps long lines
    assert "installing numpy, scikit-learn, tinyguess with pip" in err
    assert "not importing the modules of scikit-learn (skip_import_check)" in err
    assert (
        "tritonpy: warning: distribution tinyguess: no module 'tinyguess_gone' in the "
        "environment (the modules read from its installed metadata: 'tinyguess_gone'); "
        f"{model / '1' / 'model.py'} imported fine there, so this is not a failure"
    ) in err


# ------------------------------------ environment markers: evaluated for the env's Python
# pywin32 has no distribution for Linux on the package index and backports.zoneinfo is only
# for Pythons before 3.9: pip skips both lines in a Python 3.10 environment, so verifying
# them would fail ("distribution pywin32 is not installed"); pack-env leaves them to pip.
MARKER_LINES = [
    "numpy<2",
    'pywin32>=306; sys_platform == "win32"',
    "backports.zoneinfo; python_version < '3.9'",
]


def test_false_marker_lines_are_left_to_pip_through_the_cli(
    tmp_path: Path,
    frozen_tritonpy: RunningTritonpy,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    triton_server_factory: Callable[..., Any],
) -> None:
    model = tmp_path / "repo" / "markers"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "config.pbtxt").write_text('name: "markers"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("\n".join(MARKER_LINES) + "\n")
    monkeypatch.setattr(pack_module, "running_tritonpy", lambda: frozen_tritonpy)
    argv = ["pack-env", str(model), "--python", "3.10", "--builder", "local"]
    assert cli.main([*argv, "--server-python", SERVING, "--compress-level", "1"]) == 0
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "installing numpy with pip" in err
    skipped = "; pip skips that line there, so it is neither listed nor verified"
    assert 'pywin32: marker sys_platform == "win32" is false for Python 3.10 (3.10.' in err
    assert 'backports-zoneinfo: marker python_version < "3.9" is false for Python 3.10' in err
    assert err.count(skipped) == 2
    archive = model / "markers_py3.10.tar.gz"
    with tarfile.open(archive) as tar:
        site = "lib/python3.10/site-packages/"
        names = [n[len(site) :].lower() for n in tar.getnames() if n.startswith(site)]
    assert any(n.startswith("numpy/") for n in names)
    assert not any(n.startswith(("pywin32", "win32", "backports")) for n in names)

    server = triton_server_factory(tmp_path / "repo", startup_timeout=180)
    assert server.models_ready() == ["markers"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    inp = httpclient.InferInput("X", [1, 2], "FP32")
    inp.set_data_from_numpy(np.array([[1.0, 2.0]], np.float32))
    answer = client.infer("markers", [inp])
    assert answer.as_numpy("VERSION").reshape(-1)[0].decode().startswith("3.10.")
    assert answer.as_numpy("SUM").tolist() == [[3.0]]
