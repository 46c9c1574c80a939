"""The proof: a model packed with a Python 3.10 environment (pyenv's CPython, numpy<2,
tritonpy) and the 3.10 stub from the wheel runs under Python 3.10 *from the archive* in the real
tritonserver, whose own serving interpreter is this one (3.11)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy.envs import pack_env
from tritonpy.stubs._cache import STUB_NAME
from tritonpy.stubs._elf import check_libpython

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
