"""A repository in object storage, served by the real tritonserver straight from the bucket
(SeaweedFS's S3 gateway, the ``s3_bucket`` fixture): uploaded with plain boto3, so no file keeps a
mode, exactly as ``aws s3 sync`` leaves it.

What the server must do from the bucket: unpack an environment named through
``$$TRITON_MODEL_DIRECTORY`` (another Python than the server's) and start the
``triton_python_backend_stub`` published beside its config.pbtxt although the store kept no
execute bit (python_backend r24.10 src/stub_launcher.cc tries the stub and chmods it); load a
new version published while serving; heal a model whose stub died by copying it again. And
what tritonpy adds: a check of the bucket before the server starts (TP507 for a missing stub,
naming the URL), and one-line refusals for a wrong bucket, an empty prefix, a store that does
not answer, missing credentials.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import tritonclient.http as httpclient

from tests.integration.conftest import make_repository
from tests.integration.test_serve_cli import Serve, serve_env
from tritonpy import ToolError
from tritonpy.server import PreflightError, RepositoryWatcher, TritonServer
from tritonpy.stubs._cache import STUB_NAME

pytestmark = pytest.mark.integration

SERVING = f"{sys.version_info[0]}.{sys.version_info[1]}"
ENV_PYTHON = "3.10"

VERSION_MODEL = """
import sys

import tritonpy as tp


class PythonVersion(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"VERSION": tp.Text(), "SUM": tp.Tensor("FP32", [1])}
    max_batch_size = 8

    def infer(self, X):
        python = "%d.%d" % sys.version_info[:2]
        return {"VERSION": [python] * X.shape[0], "SUM": X.sum(1, keepdims=True) + OFFSET}


OFFSET = 0
TritonPythonModel = PythonVersion
"""


def upload(bucket: Any, repository: Path, prefix: str) -> List[str]:
    """Every file of ``repository`` as an object under ``prefix`` (boto3's upload_file: the
    object store keeps the bytes, no mode); the keys, sorted."""
    keys = []
    for path in sorted(p for p in repository.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        key = f"{prefix}/{path.relative_to(repository).as_posix()}"
        bucket.client.upload_file(str(path), bucket.name, key)
        keys.append(key)
    return keys


@pytest.fixture(scope="module")
def env_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """add_sub (raw pb_utils) and a tritonpy model with its own Python 3.10 environment and the
    wheel's r24.10 stub for 3.10 beside its config.pbtxt (what pack-env places for a server
    whose Python is not the environment's)."""
    from tritonpy.envs import pack_env

    assert SERVING != ENV_PYTHON, "the environment must have another Python than the server"
    repo = make_repository(tmp_path_factory.mktemp("s3src") / "repo", "add_sub")
    model = repo / "pyversion"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(VERSION_MODEL)
    (model / "config.pbtxt").write_text('name: "pyversion"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("numpy<2\n")
    result = pack_env(
        model, python=ENV_PYTHON, builder="local", server_python=SERVING, compress_level=1
    )
    assert result.stub is not None and (model / STUB_NAME).is_file()
    return repo


def stub_processes(server: TritonServer) -> Dict[int, str]:
    """pid -> command line of each stub process of ``server``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == server.pid and argv and argv[0].endswith(STUB_NAME.encode()):
            found[int(entry.name)] = b" ".join(argv).decode(errors="replace")
    return found


def ask(server: TritonServer, model: str = "pyversion") -> Dict[str, Any]:
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    x = httpclient.InferInput("X", [1, 3], "FP32")
    x.set_data_from_numpy(np.array([[1, 2, 3]], np.float32))
    answer = client.infer(model, [x])
    return {"VERSION": answer.as_numpy("VERSION"), "SUM": answer.as_numpy("SUM")}


def test_a_bucket_serves_an_environment_and_its_stub_without_file_modes(
    env_repo: Path, s3_bucket: Any, triton_server_factory: Callable[..., TritonServer]
) -> None:
    keys = upload(s3_bucket, env_repo, "prod/models")
    assert "prod/models/pyversion/triton_python_backend_stub" in keys
    assert any(k.endswith(f"_py{ENV_PYTHON}.tar.gz") for k in keys), keys
    began = time.monotonic()
    server = triton_server_factory(
        s3_bucket.url("prod/models"), env=s3_bucket.env, check=True, startup_timeout=240
    )
    ready_s = time.monotonic() - began
    assert server.command[1] == f"--model-repository={s3_bucket.url('prod/models')}"
    # the bucket holds a stub: one load at a time (else "Text file busy", see _tooling)
    assert "--model-load-thread-count=1" in server.command
    assert sorted(server.models_ready()) == ["add_sub", "pyversion"]
    assert server.preflight_report is not None and server.preflight_report.errors == []
    answer = ask(server)
    assert answer["VERSION"].tolist() == [[ENV_PYTHON.encode()]]  # the environment's Python
    assert answer["SUM"].tolist() == [[6.0]]
    # pyversion's stub is the bucket's, run out of tritonserver's local copy of the model
    # (/tmp/folderXXXXXX, core r24.10 s3.h LocalizePath); add_sub's is the backend's own
    stubs = {" pyversion_0" in c: c.split()[0] for c in stub_processes(server).values()}
    assert stubs[True].startswith(f"{tempfile.gettempdir()}/folder"), stubs
    assert stubs[False].startswith(server.backend_directory or ""), stubs
    assert not stubs[True].startswith(str(env_repo)), stubs
    print(f"\nserved from the bucket, ready in {ready_s:.1f} s (check included)")


def test_the_check_before_serving_names_the_bucket(
    env_repo: Path, s3_bucket: Any, tmp_path: Path
) -> None:
    """Without its stub, the environment of another Python is TP507, found in the bucket
    before tritonserver starts; the message names the URL, not a temporary copy."""
    upload(s3_bucket, env_repo, "nostub")
    s3_bucket.client.delete_object(Bucket=s3_bucket.name, Key=f"nostub/pyversion/{STUB_NAME}")
    server = TritonServer(s3_bucket.url("nostub"), env=s3_bucket.env, check=True)
    with pytest.raises(PreflightError) as caught:
        server.start()
    text = str(caught.value)
    assert f"the model repository {s3_bucket.url('nostub')} has 1 error" in text, text
    assert "TP507" in text and "pyversion" in text, text
    assert "tritonpy-s3-copy" not in text, text
    assert server.pid is None  # never launched


@pytest.mark.parametrize(
    "where, expected",
    [
        ("bucket", "-no-such-bucket' does not exist at http://"),
        ("another bucket", "refused the credentials (AccessDenied)"),
        ("secret", "refused the credentials (SignatureDoesNotMatch)"),
        ("prefix", "there is no object under 'prod/typo' in bucket"),
        ("port", "no S3 store answers at http://127.0.0.1:9"),
        ("credentials", "no credentials for the S3-compatible store"),
    ],
)
def test_a_bucket_that_cannot_be_served_is_refused_before_the_server_starts(
    where: str, expected: str, s3_bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3_bucket.client.put_object(Bucket=s3_bucket.name, Key="prod/models/m/config.pbtxt", Body=b"")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    env = dict(s3_bucket.env)
    url = s3_bucket.url("prod/typo")
    owner = s3_bucket.name.split("-")[0]  # the bucket's identity may use <owner>-* alone
    if where == "bucket":
        url = url.replace(f"/{s3_bucket.name}/", f"/{owner}-no-such-bucket/")
    elif where == "another bucket":
        url = url.replace(f"/{s3_bucket.name}/", "/t999-not-this-keys/")
    elif where == "secret":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    elif where == "port":
        url = f"s3://127.0.0.1:9/{s3_bucket.name}/prod/models"
    elif where == "credentials":
        env = {"AWS_DEFAULT_REGION": "us-east-1"}
    server = TritonServer(url, env=env)
    with pytest.raises(ToolError) as caught:
        server.start()
    assert expected in str(caught.value), str(caught.value)
    if where == "prefix":
        assert "Folders there: prod/models" in str(caught.value), str(caught.value)
    assert server.pid is None


def test_a_version_published_while_serving_is_loaded_by_the_watcher(
    env_repo: Path, s3_bucket: Any, triton_server_factory: Callable[..., TritonServer]
) -> None:
    """``serve s3://... --reload``: a new version uploaded into the served bucket is seen in
    the listing (ETags) and loaded; the server copies the model again from the bucket."""
    upload(s3_bucket, env_repo, "live")
    server = triton_server_factory(
        s3_bucket.url("live"), env=s3_bucket.env, reloadable=True, startup_timeout=240
    )
    assert ask(server)["SUM"].tolist() == [[6.0]]
    events: List[Any] = []
    watcher = RepositoryWatcher(server, on_event=events.append, settle=0.0)
    assert watcher.interval >= 5.0  # a bucket is listed at most every 5 s
    assert watcher.look() == []
    s3_bucket.client.put_object(
        Bucket=s3_bucket.name,
        Key="live/pyversion/2/model.py",
        Body=VERSION_MODEL.replace("OFFSET = 0", "OFFSET = 100").encode(),
    )
    assert watcher.look() == []  # seen once: it must stay the same for a moment
    (event,) = watcher.look()
    assert (event.kind, event.model, event.versions) == ("reloaded", "pyversion", ("2",))
    assert ask(server)["SUM"].tolist() == [[106.0]]


def test_a_dead_stub_is_healed_from_the_bucket(
    env_repo: Path, s3_bucket: Any, triton_server_factory: Callable[..., TritonServer]
) -> None:
    upload(s3_bucket, env_repo, "heal")
    server = triton_server_factory(s3_bucket.url("heal"), env=s3_bucket.env, startup_timeout=240)
    assert server.healer is not None
    victims = [pid for pid, c in stub_processes(server).items() if "pyversion" in c]
    assert len(victims) == 1, stub_processes(server)
    os.kill(victims[0], signal.SIGKILL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(e.kind == "reloaded" for e in server.healer.events):
            break
        time.sleep(0.5)
    kinds = [(e.kind, e.model) for e in server.healer.events]
    assert ("died", "pyversion") in kinds and ("reloaded", "pyversion") in kinds, kinds
    assert ask(server)["VERSION"].tolist() == [[ENV_PYTHON.encode()]]


def test_cli_serves_a_bucket(
    env_repo: Path,
    s3_bucket: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``tritonpy serve s3://HOST:PORT/BUCKET/PREFIX``, the credentials in the environment as
    for tritonserver; then Ctrl-C."""
    upload(s3_bucket, env_repo, "cli/models")
    for name, value in s3_bucket.env.items():
        monkeypatch.setenv(name, value)
    url = s3_bucket.url("cli/models")
    server = Serve([url, "--timeout", "240"], serve_env(tmp_path))
    try:
        _check_cli_serving(server, url)
    finally:
        if server.proc.poll() is None:
            server.stop_now()


def _check_cli_serving(server: Serve, url: str) -> None:
    assert f"starting tritonserver on {url}" in server.startup, server.startup
    assert f"  from     {url}" in server.startup, server.startup
    assert "  models   add_sub, pyversion" in server.startup, server.startup
    http_url = server.field(r"HTTP\s+(\S+)")
    client = httpclient.InferenceServerClient(http_url[len("http://") :])
    x = httpclient.InferInput("X", [1, 2], "FP32")
    x.set_data_from_numpy(np.array([[1, 2]], np.float32))
    assert client.infer("pyversion", [x]).as_numpy("VERSION").tolist() == [[b"3.10"]]
    assert server.stop() == 0, server.err
