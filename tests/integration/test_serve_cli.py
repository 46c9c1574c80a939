"""``tritonpy serve`` against the real tritonserver, as a user runs it: a model packed with a
Python 3.10 environment served from this (3.11) interpreter, the preflight check, Triton's
own load errors translated, Triton's default ports, model logs on the console, and the log
file kept after the stop."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy.server import ModelLoadError, PreflightError, TritonServer
from tritonpy.server._ports import port_is_free
from tritonpy.server._shadow import STUB_NAME

pytestmark = pytest.mark.integration

MakeRepo = Callable[..., Path]

VERSION_MODEL = """
import sys

import numpy as np

import tritonpy as tp


class PythonVersion(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"VERSION": tp.Text(), "SUM": tp.Tensor("FP32", [1])}
    max_batch_size = 8

    def setup(self):
        print("setup under Python", sys.version.split()[0], flush=True)

    def infer(self, X):
        return {"VERSION": [sys.version.split()[0]] * X.shape[0], "SUM": X.sum(1, keepdims=True)}


TritonPythonModel = PythonVersion
"""

TALKING_MODEL = """
import sys

import triton_python_backend_utils as pb_utils

import tritonpy as tp


class Talk(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}

    def setup(self):
        pb_utils.Logger.log_warn("talk is warming up")
        print("talk printed this", flush=True)

    def infer(self, X):
        if X.sum() < 0:
            raise ValueError("talk refuses negative sums")
        return {"Y": X * 2}


TritonPythonModel = Talk
"""


def snapshot(directory: Path) -> Dict[str, Tuple[int, int]]:
    """Every path under ``directory`` with its size and modification time."""
    return {
        str(p.relative_to(directory)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
    }


@pytest.fixture(scope="module")
def packed_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose model is packed with Python 3.10 the way a user does it
    (``tritonpy pack-env MODEL --python 3.10``: release 24.10's Python, so no stub is placed)."""
    from tritonpy.envs import pack_env

    repo = tmp_path_factory.mktemp("packed") / "repo"
    model = repo / "pyversion"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(VERSION_MODEL)
    (model / "config.pbtxt").write_text('name: "pyversion"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("numpy<2\n")
    result = pack_env(model, python="3.10", builder="local", compress_level=1)
    assert result.stub is None and not (model / STUB_NAME).exists()
    return repo


def serve_env(tmp_path: Path) -> Dict[str, str]:
    """The environment of a ``tritonpy serve`` subprocess: its cache (logs) under tmp_path."""
    return {**os.environ, "TRITONPY_CACHE_DIR": str(tmp_path / "cache")}


class Serve:
    """A running ``tritonpy serve`` subprocess, read until it says it is serving."""

    def __init__(self, args: List[str], env: Dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tritonpy.cli", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines: List[str] = []
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            lines.append(line)
            if line.startswith("serving"):
                break
        self.startup = "".join(lines)
        self.out = ""
        self.err = ""

    def field(self, pattern: str) -> str:
        match = re.search(pattern, self.startup, re.MULTILINE)
        assert match, f"{pattern!r} not in:\n{self.startup}\n{self.stop_now()}"
        return match.group(1)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        self.out, self.err = self.startup + out, err
        return self.proc.returncode

    def stop_now(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        out, err = self.proc.communicate()
        return out + err


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Serve]]:
    started: List[Serve] = []

    def start(*args: str) -> Serve:
        server = Serve(list(args), serve_env(tmp_path))
        started.append(server)
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.stop_now()


# ------------------------------------------------------------- environments of another Python
def test_cli_serves_a_packed_310_model_without_touching_it(
    packed_repo: Path, serve: Callable[..., Serve]
) -> None:
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" != "3.10"
    model = packed_repo / "pyversion"
    before = snapshot(model)
    server = serve(str(packed_repo), "--timeout", "180")
    http_url = server.field(r"HTTP\s+(\S+)")
    assert "stub     pyversion: Python 3.10" in server.startup
    assert "env      pyversion: pyversion_py3.10.tar.gz used unpacked (" in server.startup
    assert "[pyversion] setup under Python 3.10." in server.startup  # stub stdout, echoed

    client = httpclient.InferenceServerClient(http_url[len("http://") :])
    x = np.array([[1.0, 2.0, 3.5]], np.float32)
    inp = httpclient.InferInput("X", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    answer = client.infer("pyversion", [inp])
    assert answer.as_numpy("VERSION").reshape(-1)[0].decode().startswith("3.10.")
    assert answer.as_numpy("SUM").tolist() == [[6.5]]

    assert server.stop() == 0, server.err
    assert snapshot(model) == before  # no stub, no __pycache__, nothing


def test_library_shadow_repository_is_removed_on_stop(
    packed_repo: Path, triton_server_factory: Callable[..., TritonServer]
) -> None:
    server = triton_server_factory(packed_repo, check=True, startup_timeout=180)
    assert list(server.provided_stubs) == ["pyversion"]
    shadow = server.served_repository
    assert shadow != packed_repo and (shadow / "pyversion" / STUB_NAME).is_file()
    assert server.preflight_report is not None and "TP507" not in server.preflight_report.codes
    server.stop()
    assert not shadow.exists()
    assert not (packed_repo / "pyversion" / STUB_NAME).exists()


def test_an_archive_is_served_from_its_unpacked_copy_without_extraction(
    packed_repo: Path, triton_server_factory: Callable[..., TritonServer]
) -> None:
    """The Python backend (pb_env.cc) extracts an EXECUTION_ENV_PATH archive into
    /tmp/python_env_* at every server start; the shadow names the model's archive after
    tritonpy's unpacked copy of it, a directory, which the backend uses in place: the start
    extracts nothing. With unpacked_envs=False tritonserver extracts it, as before."""
    for unpacked, extractions in ((True, 0), (False, 1)):
        server = triton_server_factory(
            packed_repo, startup_timeout=180, log_verbose=1, unpacked_envs=unpacked
        )
        assert server.log_path is not None
        log = server.log_path.read_text(errors="replace")
        assert log.count("Extracting Python execution env") == extractions, unpacked
        assert sorted(server.unpacked) == (["pyversion"] if unpacked else [])
        client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
        x = np.array([[1.0, 2.0]], np.float32)
        inp = httpclient.InferInput("X", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        answer = client.infer("pyversion", [inp])
        assert answer.as_numpy("VERSION").reshape(-1)[0].decode().startswith("3.10.")
        server.stop()
    assert not (packed_repo / "pyversion" / STUB_NAME).exists()


def test_without_env_stubs_the_check_reports_the_mismatch(packed_repo: Path) -> None:
    server = TritonServer(packed_repo, check=True, env_stubs=False)
    with pytest.raises(PreflightError) as info:
        server.start()
    assert "TP507" in str(info.value) and "pyversion" in str(info.value)
    assert server.pid is None


# ------------------------------------------------------------------------ fail fast
def test_preflight_failure_exits_before_starting(
    tmp_path: Path, repository_builder: MakeRepo, serve: Callable[..., Serve]
) -> None:
    repo = repository_builder(tmp_path / "repo", "add_sub")
    (repo / "add_sub" / "1" / "model.py").rename(repo / "add_sub" / "1" / "Model.py")
    # a startup timeout longer than the subprocess may run: only a preflight failure ends it
    proc = subprocess.run(
        [sys.executable, "-m", "tritonpy.cli", "serve", str(repo), "--timeout", "3600"],
        capture_output=True,
        text=True,
        timeout=120,
        env=serve_env(tmp_path),
    )
    assert proc.returncode == 1
    assert "TP105" in proc.stderr and "add_sub/1/model.py" in proc.stderr
    assert "tritonserver was not started" in proc.stderr and "--no-check" in proc.stderr
    assert "tritonserver ready" not in proc.stdout


def test_misnamed_model_file_fails_at_once_without_the_check(
    tmp_path: Path, repository_builder: MakeRepo
) -> None:
    repo = repository_builder(tmp_path / "repo", "add_sub")
    (repo / "add_sub" / "1" / "model.py").rename(repo / "add_sub" / "1" / "model_v2.py")
    server = TritonServer(repo, startup_timeout=3600)  # the stub's exit is read from the log
    with pytest.raises(ModelLoadError) as info:
        server.start()
    assert list(info.value.failures) == ["add_sub"]
    assert "version 1 of model 'add_sub' has no model.py" in info.value.failures["add_sub"]
    assert not server.running


def test_missing_triton_python_model_names_the_fix(
    tmp_path: Path, repository_builder: MakeRepo, serve: Callable[..., Serve]
) -> None:
    repo = repository_builder(tmp_path / "repo", "add_sub")
    model_py = repo / "add_sub" / "1" / "model.py"
    model_py.write_text(model_py.read_text().replace("class TritonPythonModel", "class AddSub"))
    server = TritonServer(repo)
    with pytest.raises(ModelLoadError) as info:
        server.start()
    assert "model 'add_sub': its model.py defines no TritonPythonModel" in str(info.value)
    assert "Add `TritonPythonModel = YourClass`" in str(info.value)
    # the CLI's preflight says it before starting
    proc = subprocess.run(
        [sys.executable, "-m", "tritonpy.cli", "serve", str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
        env=serve_env(tmp_path),
    )
    assert proc.returncode == 1
    assert "TP107" in proc.stderr and "TritonPythonModel = MyModel" in proc.stderr


# ------------------------------------------------------------------- ports, logs, console
def hold_ports(stack: ExitStack, ports: Tuple[int, ...]) -> None:
    for port in ports:
        sock = stack.enter_context(socket.socket())
        # as servers do: a port left in TIME_WAIT by an earlier server can be held again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()


def talking_repo(tmp_path: Path) -> Path:
    model = tmp_path / "repo" / "talk"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(TALKING_MODEL)
    (model / "config.pbtxt").write_text('name: "talk"\nbackend: "python"\n')
    return model.parent


def test_busy_default_ports_give_free_ones_and_the_infer_command(
    tmp_path: Path, serve: Callable[..., Serve]
) -> None:
    repo = talking_repo(tmp_path)
    with ExitStack() as stack:
        defaults = tuple(p for p in (8000, 8001, 8002) if port_is_free(p))
        hold_ports(stack, defaults)  # whatever else holds the others keeps holding them
        server = serve(str(repo))
        grpc_port = int(server.field(r"gRPC\s+127\.0\.0\.1:(\d+)"))
        assert grpc_port != 8001
        command = server.field(r"query:\s+(tritonpy infer .*)")
        assert command == f"tritonpy infer talk --url localhost:{grpc_port} -i X=..."
        log_path = Path(server.field(r"^  log\s+(\S+)$"))
    assert "[talk] W model.py:" in server.startup and "talk is warming up" in server.startup
    assert "[talk] talk printed this" in server.startup

    argv = command.split()[1:5]  # infer talk --url localhost:PORT
    infer = subprocess.run(
        [sys.executable, "-m", "tritonpy.cli", *argv[:4], "-i", "X=[1, 2]"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert infer.returncode == 0, infer.stderr
    assert "[2.0, 4.0]" in infer.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tritonpy.cli", *argv[:4], "-i", "X=[-1, -2]"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "talk refuses negative sums" in bad.stderr

    assert server.stop() == 0, server.err
    assert "[talk] E " in server.out and "talk refuses negative sums" in server.out
    assert f"stopped; the server log is kept in {log_path}" in server.out
    assert log_path.is_file() and log_path.parent == tmp_path / "cache" / "logs"
    assert "talk refuses negative sums" in log_path.read_text()


def test_triton_default_ports_when_free(tmp_path: Path, serve: Callable[..., Serve]) -> None:
    busy = [p for p in (8000, 8001, 8002) if not port_is_free(p)]
    if busy:
        pytest.skip(f"port(s) {busy} are in use by another process on this machine")
    server = serve(str(talking_repo(tmp_path)), "--quiet")
    assert server.field(r"HTTP\s+(\S+)") == "http://127.0.0.1:8000"
    assert server.field(r"gRPC\s+(\S+)") == "127.0.0.1:8001"
    assert server.field(r"metrics\s+(\S+)") == "http://127.0.0.1:8002/metrics"
    assert "query:   tritonpy infer talk --url localhost:8001 -i X=..." in server.startup
    assert "[talk]" not in server.startup  # --quiet
    assert server.stop() == 0, server.err


def test_an_explicit_busy_port_names_the_flag(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "tritonpy.cli", "serve", str(talking_repo(tmp_path)),
             "--http-port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            env=serve_env(tmp_path),
        )  # fmt: skip
    assert proc.returncode == 1
    assert f"the HTTP port {port} on 127.0.0.1 is already in use" in proc.stderr
    assert "--http-port PORT" in proc.stderr and "http_port=" not in proc.stderr
