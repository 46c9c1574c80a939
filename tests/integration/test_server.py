"""The embedded tritonserver against real models: readiness, inference over HTTP and gRPC,
load errors with the model's own text, the startup timeout, a clean stop, and the CLI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, List, Optional

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from tritonpy._tooling.installation import inspect_interpreter
from tritonpy._tooling.processes import group_members
from tritonpy.cli import main
from tritonpy.server import ModelLoadError, ServerError, ServerTimeoutError, TritonServer

pytestmark = pytest.mark.integration

MakeRepo = Callable[..., Path]


def leftovers(pgid: Optional[int], repo: Path) -> List[str]:
    """Processes of a stopped server still alive: its group, or anything serving ``repo``."""
    found = [] if pgid is None else [p.cmdline for p in group_members(pgid, include_zombies=True)]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if str(repo) in cmd and ("tritonserver" in cmd or "triton_python_backend_stub" in cmd):
            found.append(cmd)
    return found


# ------------------------------------------------------------------------- the session server
def test_server_ready_with_all_models(triton_server: TritonServer) -> None:
    assert triton_server.running
    assert triton_server.is_ready()
    assert triton_server.models_ready() == ["add_sub", "echo_text"]
    assert {m.state for m in triton_server.model_statuses()} == {"READY"}
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", triton_server.http_url)
    with urllib.request.urlopen(triton_server.metrics_url, timeout=5) as resp:
        assert b"nv_inference_count" in resp.read()
    assert "Started HTTPService at 127.0.0.1:" in triton_server.log_tail(200)


def test_infer_over_http(triton_server: TritonServer) -> None:
    client = httpclient.InferenceServerClient(triton_server.http_url[len("http://") :])
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([0.5, 0.5, 0.5, 0.5], np.float32)
    inputs = [
        httpclient.InferInput("INPUT0", [4], "FP32"),
        httpclient.InferInput("INPUT1", [4], "FP32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("add_sub", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_infer_over_grpc_batched_bytes(triton_server: TritonServer) -> None:
    client = grpcclient.InferenceServerClient(triton_server.grpc_url)
    text = np.array([["héllo".encode()], [b"abc"]], dtype=np.object_)
    tensor = grpcclient.InferInput("TEXT", [2, 1], "BYTES")
    tensor.set_data_from_numpy(text)
    result = client.infer("echo_text", [tensor])
    assert result.as_numpy("UPPER").tolist() == [["HÉLLO".encode()], [b"ABC"]]
    assert result.as_numpy("LENGTH").tolist() == [[6], [3]]


# ------------------------------------------------------------------------------- load errors
@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("broken_syntax", "SyntaxError: expected ':' (model.py, line 5)"),
        ("missing_package", "No module named 'tritonpy_no_such_package_xyz'"),
    ],
)
def test_broken_model_raises_model_load_error(
    model: str, expected: str, tmp_path: Path, repository_builder: MakeRepo
) -> None:
    repo = repository_builder(tmp_path / "repo", model)
    server = TritonServer(repo)
    with pytest.raises(ModelLoadError) as info:
        server.start()
    err = info.value
    assert list(err.failures) == [model]
    assert expected in err.failures[model]
    message = str(err)
    assert f"model {model!r} failed to load" in message
    assert expected in message
    assert "Server log tail:" in message and err.log_tail
    assert not server.running
    assert server.pid is None
    assert leftovers(None, repo) == []


def test_startup_timeout_names_the_model(tmp_path: Path, repository_builder: MakeRepo) -> None:
    repo = repository_builder(tmp_path / "repo", "slow_init", "add_sub")
    server = TritonServer(repo, startup_timeout=3)
    began = time.monotonic()
    with pytest.raises(ServerTimeoutError) as info:
        server.start()
    assert time.monotonic() - began < 15
    assert info.value.not_ready == ["slow_init"]
    assert "did not become ready within 3 s" in str(info.value)
    assert "'slow_init'" in str(info.value)
    assert leftovers(None, repo) == []


def test_stub_for_a_python_the_machine_cannot_load_times_out_cleanly(
    tmp_path: Path, repository_builder: MakeRepo
) -> None:
    """A model directory's own stub wins over the backend's; one built for Python 3.9, whose
    libpython is not on the library path, never starts and Triton's launcher waits forever.
    tritonpy reads the loader's error from the log, stops at once with the model's name and
    the fix, and leaves nothing behind."""
    import shutil

    from tritonpy.server import find_wheel_installation

    repo = repository_builder(tmp_path / "repo", "add_sub")
    stub = find_wheel_installation().stub("3.9")
    shutil.copy2(stub, repo / "add_sub" / "triton_python_backend_stub")
    server = TritonServer(repo, startup_timeout=60)
    began = time.monotonic()
    with pytest.raises(ModelLoadError) as info:
        server.start()
    assert time.monotonic() - began < 30  # the loader error is read from the log: no waiting
    assert list(info.value.failures) == ["add_sub"]
    assert "libpython3.9.so.1.0: cannot open shared object file" in info.value.failures["add_sub"]
    assert "tritonpy stub MODEL_DIR --python X.Y" in str(info.value)
    assert not server.running
    assert leftovers(None, repo) == []


def test_port_in_use_is_reported(tmp_path: Path, repository_builder: MakeRepo) -> None:
    import socket

    repo = repository_builder(tmp_path / "repo", "add_sub")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = TritonServer(repo, grpc_port=port)
        with pytest.raises(ServerError, match=rf"the gRPC port {port} on 127.0.0.1 is already in"):
            server.start()
        assert "grpc_port=PORT" in str(server_error(server))
    assert server.pid is None  # found before anything started
    assert leftovers(None, repo) == []


def server_error(server: TritonServer) -> ServerError:
    with pytest.raises(ServerError) as info:
        server.start()
    return info.value


def test_missing_repository_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match="is not a directory"):
        TritonServer(tmp_path / "nope").start()


# ------------------------------------------------------------------------------------ stop
def test_stop_ends_server_and_stubs(tmp_path: Path, repository_builder: MakeRepo) -> None:
    repo = repository_builder(tmp_path / "repo", "add_sub", "echo_text")
    with TritonServer(repo) as server:
        pid = server.pid
        assert pid is not None
        running = [p.cmdline for p in group_members(pid)]
        assert sum("triton_python_backend_stub" in c for c in running) == 2
        assert any("tritonserver" in c.split()[0] for c in running)
    assert server.returncode == 0  # SIGINT: Triton unloaded the models and exited cleanly
    assert leftovers(pid, repo) == []
    server.stop()  # idempotent


def test_backend_directory_for_another_python() -> None:
    import glob
    import os

    # another CPython than the one running the tests: pyenv's 3.10, as on the dev machines
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", "3.10.*", "bin", "python3.10")))
    other = found[-1] if found else sys.executable
    interp = inspect_interpreter(other)
    assert Path(interp.libpython).name.startswith(f"libpython{interp.xy}")
    from tritonpy._tooling.installation import prepare_backend_directory
    from tritonpy.server import find_wheel_installation

    wheel = find_wheel_installation()
    backends = prepare_backend_directory(wheel, interp)
    stub = backends / "python" / "triton_python_backend_stub"
    assert stub.read_bytes() == wheel.stub(interp.xy).read_bytes()
    assert (backends / "python" / "libtriton_python.so").is_file()


# ------------------------------------------------------------------------------------- CLI
def test_cli_serve_stops_cleanly_on_sigint(tmp_path: Path, repository_builder: MakeRepo) -> None:
    repo = repository_builder(tmp_path / "repo", "add_sub")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonpy.cli", "serve", str(repo), "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: List[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("serving"):
                break
        text = "".join(lines)
        pid = int(re.search(r"ready \(pid (\d+)\)", text).group(1))  # type: ignore[union-attr]
        http_url = re.search(r"HTTP\s+(\S+)", text).group(1)  # type: ignore[union-attr]
        assert "models   add_sub" in text
        with urllib.request.urlopen(f"{http_url}/v2/health/ready", timeout=5) as resp:
            assert resp.status == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "stopped" in out
    assert leftovers(pid, repo) == []


def test_cli_serve_reports_load_error(tmp_path: Path, repository_builder: MakeRepo) -> None:
    repo = repository_builder(tmp_path / "repo", "broken_syntax")
    proc = subprocess.run(  # --no-check: the server's own report, not the preflight's
        [sys.executable, "-m", "tritonpy.cli", "serve", str(repo), "--no-check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "model 'broken_syntax' failed to load" in proc.stderr
    assert "SyntaxError" in proc.stderr
    assert leftovers(None, repo) == []


def test_cli_infer_grpc_json(
    triton_server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["infer", "add_sub", "--url", triton_server.grpc_url,
         "--input", "INPUT0=[1, 2, 3, 4]", "--input", "INPUT1=[1,1,1,1]"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "OUTPUT0 (FP32, shape [4]): [2.0, 3.0, 4.0, 5.0]" in out
    assert "OUTPUT1 (FP32, shape [4]): [0.0, 1.0, 2.0, 3.0]" in out


def test_cli_infer_http_text_and_file(
    triton_server: TritonServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["infer", "echo_text", "--url", triton_server.http_url, "-i", "TEXT=héllo wörld"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "UPPER (BYTES, shape [1, 1]): [['HÉLLO WÖRLD']]" in out
    assert "LENGTH (INT64, shape [1, 1]): [[13]]" in out

    data = tmp_path / "data.bin"
    data.write_bytes(b"abc\n")
    rc = main(
        ["infer", "echo_text", "--url", triton_server.grpc_url, "--protocol", "grpc",
         "-i", f"TEXT=@{data}", "-o", "LENGTH"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert out.strip() == "LENGTH (INT64, shape [1, 1]): [[4]]"


def test_cli_infer_error_response(
    triton_server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["infer", "add_sub", "--url", triton_server.http_url,
         "-i", "INPUT0=[1,2,3]", "-i", "INPUT1=[1,1,1]"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("[INVALID_ARG] ")
    assert "unexpected shape for input 'INPUT1'" in err or "'INPUT0'" in err

    rc = main(["infer", "no_such_model", "--url", triton_server.grpc_url, "-i", "X=1"])
    assert rc == 1
    assert capsys.readouterr().err.startswith("[NOT_FOUND] ")

    rc = main(["infer", "add_sub", "--url", triton_server.grpc_url, "-i", "INPUT0=abc"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "needs input(s) 'INPUT1'" in err

    rc = main(
        ["infer", "add_sub", "--url", triton_server.grpc_url, "-i", "INPUT0=abc", "-i", "INPUT1=1"]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert "input 'INPUT0' is FP32 with dims [4]: expected a JSON number or list, got 'abc'" in err


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("tritonpy ")


def test_atexit_stops_a_forgotten_server(tmp_path: Path, repository_builder: MakeRepo) -> None:
    repo = repository_builder(tmp_path / "repo", "add_sub")
    script = (
        "import sys\n"
        "from tritonpy.server import TritonServer\n"
        f"server = TritonServer({str(repo)!r}).start()\n"
        "print(server.pid, flush=True)\n"
        "sys.exit(0)  # no stop(): the atexit safety net must end the server\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.strip())
    assert leftovers(pid, repo) == []
