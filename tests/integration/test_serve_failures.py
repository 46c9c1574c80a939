"""What ``tritonpy serve``'s console says about a failing model, against the real server: a
load failure once and short (the cause, the user's frame, the fix, the log path), and a BLS
caller's traceback under the caller's name, not the callee's it mentions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import List

import pytest

from tritonpy.server import TritonServer

pytestmark = pytest.mark.integration

MISSING = """import numpy as np
import scipy_not_there

import tritonpy as tp


class Broken(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}

    def infer(self, X):
        return {"Y": X * 2}


TritonPythonModel = Broken
"""

CALLEE = """import tritonpy as tp


class Callee(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}

    def infer(self, X):
        return {"Y": -X}


TritonPythonModel = Callee
"""

# a hand-written BLS caller that prints its traceback (as many do) and one through tritonpy:
# both messages name the callee, in quotes, as Triton's own lines do
HAND_ROUTER = """import traceback

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            pb_utils.InferenceRequest(
                model_name="callee", requested_output_names=["Y"], inputs=[x]
            ).exec()
            try:
                raise RuntimeError("model 'callee' answered with negatives")
            except RuntimeError:
                traceback.print_exc()
            error = pb_utils.TritonError("router gave up")
            responses.append(pb_utils.InferenceResponse(output_tensors=[], error=error))
        return responses
"""

TP_ROUTER = """import tritonpy as tp


class Router(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}

    def infer(self, X):
        y = self.call("callee", {"X": X})["Y"]
        raise ValueError("the answer of 'callee' was negative: %s" % y.tolist())


TritonPythonModel = Router
"""

IO = """input { name: "X" data_type: TYPE_FP32 dims: [2] }
output { name: "Y" data_type: TYPE_FP32 dims: [2] }
"""


def write_model(repo: Path, name: str, source: str, config: str = "") -> Path:
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "1" / "model.py").write_text(source)
    (repo / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n{config}')
    return repo / name


def test_a_missing_package_is_said_once_with_the_fix(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "broken", MISSING)
    proc = subprocess.run(
        [sys.executable, "-m", "tritonpy.cli", "serve", str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRITONPY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 1
    lines = (proc.stdout + proc.stderr).splitlines()
    shown = "\n".join(lines)
    assert len(lines) <= 15, shown
    # check's warning comes before the server starts; the failure follows, once
    assert lines[1].startswith("check: broken/1/model.py: warning TP109"), shown
    headline = "model 'broken' failed to load: ModuleNotFoundError: No module named "
    assert [ln for ln in lines if headline in ln] == [
        f"tritonpy: error: {headline}'scipy_not_there'"
    ], shown
    at = lines.index(f"tritonpy: error: {headline}'scipy_not_there'")
    assert lines[at + 1] == f'  File "{repo}/broken/1/model.py", line 2, in <module>'
    fix = lines[at + 2]
    assert fix.startswith(f"  fix: the serving interpreter {sys.executable} has no module"), fix
    assert f"`{sys.executable} -m pip install scipy-not-there`" in fix
    assert f"`tritonpy pack-env {repo / 'broken'}`" in fix
    assert lines[-1].startswith("tritonpy: error: the full server log is kept in ")
    log = Path(lines[-1].rsplit(" ", 1)[1])
    assert "importlib._bootstrap" in log.read_text()  # the full traceback stays in the log
    for noise in ("importlib", "| Option", "server_version", "At:", "creating server"):
        assert noise not in shown, shown


def test_a_model_in_its_own_environment_is_told_to_rebuild_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    config = 'parameters { key: "EXECUTION_ENV_PATH" value: { string_value: "/nowhere.tar.gz" } }\n'
    model = write_model(repo, "broken", MISSING, config)
    server = TritonServer(repo)
    failure = server.describe_failure(
        "broken", "Internal: ModuleNotFoundError: No module named 'scipy_not_there'"
    )
    assert failure.fix == (
        "the model's environment (EXECUTION_ENV_PATH /nowhere.tar.gz) has no module "
        f"'scipy_not_there': add scipy-not-there to {model / 'requirements.txt'} and rebuild "
        f"the environment with `tritonpy pack-env {model}`"
    )


def infer_error(http_url: str, model: str) -> str:
    body = {"inputs": [{"name": "X", "datatype": "FP32", "shape": [2], "data": [1, 2]}]}
    request = urllib.request.Request(
        f"{http_url}/v2/models/{model}/infer", data=json.dumps(body).encode()
    )
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except urllib.error.HTTPError as exc:
        return str(exc.read().decode())
    return ""


def wait_for(lines: List[str], text: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in ln for ln in lines) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_bls_callers_traceback_is_shown_under_the_caller(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "callee", CALLEE)
    write_model(repo, "router", HAND_ROUTER, IO)
    write_model(repo, "tprouter", TP_ROUTER)
    console: List[str] = []
    with TritonServer(repo, log_echo=console.append, heal=False) as server:
        assert "router gave up" in infer_error(server.http_url, "router")
        assert "negative" in infer_error(server.http_url, "tprouter")
        wait_for(console, "RuntimeError: model 'callee' answered")
        wait_for(console, "ValueError: the answer of 'callee' was negative")
    shown = "\n".join(console)
    start = console.index("[router] Traceback (most recent call last):")
    assert console[start + 1] == f'[router]   File "{repo}/router/1/model.py", line 15, in execute'
    assert console[start + 3] == "[router] RuntimeError: model 'callee' answered with negatives"
    tp_lines = [ln for ln in console if "the answer of 'callee' was negative" in ln]
    assert tp_lines and all(ln.startswith("[tprouter]") for ln in tp_lines), shown
    frame = f'File "{repo}/tprouter/1/model.py", line 10, in infer'
    assert any(ln.startswith("[tprouter]") and frame in ln for ln in console), shown
    assert not [ln for ln in console if ln.startswith("[callee]") and "answer" in ln], shown


def test_checks_warnings_come_before_its_errors_and_nothing_starts(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "broken", MISSING)
    misnamed = write_model(repo, "misnamed", CALLEE)
    (misnamed / "1" / "model.py").rename(misnamed / "1" / "Model.py")
    proc = subprocess.run(
        [sys.executable, "-m", "tritonpy.cli", "serve", str(repo), "--timeout", "3600"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRITONPY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 1
    assert "check: broken/1/model.py: warning TP109: importing it failed" in proc.stdout
    assert "misnamed/1/model.py: error TP105" in proc.stderr, proc.stderr
    assert "tritonserver was not started" in proc.stderr
    assert "tritonserver ready" not in proc.stdout
