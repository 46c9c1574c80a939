"""The export, served: a tritonpy model without an environment is exported for 24.10 (the export
packs a Python 3.10 environment with the local builder, about a minute), the exported
repository is copied elsewhere (the source and OUT deleted) and served by the real tritonserver
with auto-complete disabled, so the config.pbtxt export wrote must be complete; the answer
comes from Python 3.10 out of the archive."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy.check import check_repository
from tritonpy.export import export_repository
from tritonpy.stubs._cache import STUB_NAME
from tritonpy.stubs._provision import provision_stub

pytestmark = pytest.mark.integration

MODEL = """
import sys

import numpy as np

import tritonpy as tp


class Greet(tp.Model):
    inputs = {"NAME": tp.Text(), "X": tp.Tensor("FP32", [-1])}
    outputs = {"GREETING": tp.Text(), "SUM": tp.Tensor("FP32", [1])}
    max_batch_size = 4

    def infer(self, NAME, X):
        python = "%d.%d" % sys.version_info[:2]
        return {
            "GREETING": [f"hello {n} from {python}" for n in NAME],
            "SUM": X.sum(axis=1, keepdims=True),
        }


TritonPythonModel = Greet
"""


def test_exported_repository_serves_from_anywhere(
    tmp_path: Path, triton_server_factory: Callable[..., Any]
) -> None:
    model = tmp_path / "repo" / "greet"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "config.pbtxt").write_text('name: "greet"\nbackend: "python"\n')

    out = tmp_path / "deploy"
    result = export_repository(tmp_path / "repo", out, triton_version="24.10", builder="local")
    (greet,) = result.models
    assert (greet.kind, greet.config, greet.environment, greet.python) == (
        "tritonpy",
        "materialised",
        "packed",
        "3.10",
    )
    assert greet.parameter == "$$TRITON_MODEL_DIRECTORY/greet_py3.10.tar.gz"
    assert greet.stub is None  # the 24.10 container's own Python is 3.10
    exported = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert [p for p in exported if p.startswith("model_repository/")] == [
        "model_repository/greet/1/model.py",
        "model_repository/greet/config.pbtxt",
        "model_repository/greet/greet_py3.10.tar.gz",
    ]
    assert check_repository(out / "model_repository", triton_version="24.10").findings == []

    elsewhere = tmp_path / "elsewhere" / "models"
    shutil.copytree(out / "model_repository", elsewhere)
    shutil.rmtree(out)
    shutil.rmtree(tmp_path / "repo")
    serving = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert serving != "3.10", "the proof needs a server Python other than the environment's"
    # In the 24.10 container the release's own stub runs Python 3.10; this embedded server runs
    # the venv's Python, so the 3.10 environment needs the 3.10 stub beside config.pbtxt (what
    # tritonpy serve provides itself where it does; placed here so the test does not rely on it)
    if not (elsewhere / "greet" / STUB_NAME).exists():
        provision_stub(elsewhere / "greet", triton_version="24.10", python="3.10")

    server = triton_server_factory(
        elsewhere, startup_timeout=180, extra_args=["--disable-auto-complete-config"]
    )
    assert server.models_ready() == ["greet"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    names = np.array([[b"ada"], [b"linus"]], dtype=object)
    x = np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)
    inputs = [
        httpclient.InferInput("NAME", list(names.shape), "BYTES"),
        httpclient.InferInput("X", list(x.shape), "FP32"),
    ]
    inputs[0].set_data_from_numpy(names)
    inputs[1].set_data_from_numpy(x)
    answer = client.infer("greet", inputs)
    assert [g.decode() for g in answer.as_numpy("GREETING").reshape(-1)] == [
        "hello ada from 3.10",
        "hello linus from 3.10",
    ]
    assert answer.as_numpy("SUM").tolist() == [[3.0], [7.5]]
