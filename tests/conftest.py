"""What each test folder needs beyond ``tritonpy[testing]``, in one place.

tests/runtime, tests/testing and the templates' own tests run on ``pip install
'tritonpy[testing]'`` (what needs OpenCV, torch or nvidia-pytriton skips there, naming the
install command). The folders below need the whole development set-up
(``scripts/setup_env.sh``); on an install without it they are not collected and the end of the
run names what is missing. CI has everything and must run them, so under ``CI=true`` nothing is
left out: a missing piece fails the tests instead.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
_DEV_SETUP = "pip install -e '.[image,server,config,dev]' (scripts/setup_env.sh)"


def _absent(modules: List[str]) -> List[str]:
    absent = []
    for module in modules:
        try:
            importlib.import_module(module)
        except (ImportError, RuntimeError):  # tritonclient.http without gevent: RuntimeError
            absent.append(module)
    return absent


def _old_build_backend() -> List[str]:
    # the journey builds the wheel with --no-build-isolation: pyproject.toml's backend must be here
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return ["setuptools>=77"]
    return [] if int(version.split(".")[0]) >= 77 else [f"setuptools>=77 (found {version})"]


def _missing_by_folder() -> Dict[str, List[str]]:
    # boto3 and moto: the s3 fixtures below (a real S3-compatible server per session)
    tooling = ["google.protobuf", "tritonclient.grpc", "yaml", "packaging", "platformdirs"]
    tooling += ["boto3", "moto.server"]
    found = {
        # the tooling's extras: config and tools
        "tooling": _absent([*tooling, "psutil", "elftools"]),
        # a real tritonserver (the server extra, both clients) and OpenCV for most served models
        "integration": _absent(
            ["pytriton", "tritonclient.grpc", "tritonclient.http", "cv2", "boto3", "moto.server"]
        ),
        "journey": _old_build_backend(),
    }
    return {folder: absent for folder, absent in found.items() if absent}


_MISSING = {} if os.environ.get("CI") else _missing_by_folder()


def pytest_ignore_collect(collection_path: Path) -> bool:
    path = Path(collection_path).resolve()
    return any(path == HERE / folder for folder in _MISSING)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for folder, absent in _MISSING.items():
        terminalreporter.write_line(
            f"tests/{folder} not collected: {', '.join(absent)} missing; {_DEV_SETUP}"
        )


# --- an S3-compatible object store for the tests (issue 29) -------------------------------
# moto's standalone server speaks the S3 HTTP API (path-style, SigV4) that tritonserver's S3
# filesystem and boto3 both use; one per session, a fresh bucket and made-up credentials per
# test. moto checks no signatures: the credentials are per test so that every test passes
# them the way a user must (tritonserver refuses to start without them).


class S3Server:
    """A moto S3 server on 127.0.0.1: ``endpoint`` is ``"127.0.0.1:PORT"`` (the form of an
    ``s3://HOST:PORT/BUCKET/PREFIX`` URL), ``endpoint_url`` the same with ``http://``."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log
        self.endpoint = f"127.0.0.1:{port}"
        self.endpoint_url = f"http://{self.endpoint}"

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


class S3Bucket:
    """A bucket of :class:`S3Server` with its own credentials.

    ``env`` holds the AWS_* variables to give tritonserver and boto3; ``url(prefix)`` the
    repository URL tritonserver takes; ``client`` a boto3 client; ``keys(prefix)`` the sorted
    object keys under ``prefix``.
    """

    def __init__(self, server: S3Server, name: str) -> None:
        import boto3

        self.server, self.name, self.endpoint = server, name, server.endpoint
        self.env: Dict[str, str] = {
            "AWS_ACCESS_KEY_ID": f"AKIA{uuid.uuid4().hex[:16].upper()}",
            "AWS_SECRET_ACCESS_KEY": uuid.uuid4().hex + uuid.uuid4().hex[:8],
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        self.client = boto3.client(
            "s3",
            endpoint_url=server.endpoint_url,
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
            region_name=self.env["AWS_DEFAULT_REGION"],
        )
        self.client.create_bucket(Bucket=name)

    def url(self, prefix: str = "repo") -> str:
        path = "/".join(p for p in (self.name, prefix.strip("/")) if p)
        return f"s3://{self.endpoint}/{path}"

    def keys(self, prefix: str = "") -> List[str]:
        found: List[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.name, Prefix=prefix
        ):
            found.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(found)

    def delete(self) -> None:
        for start in range(0, len(keys := self.keys()), 1000):
            chunk = [{"Key": key} for key in keys[start : start + 1000]]
            self.client.delete_objects(Bucket=self.name, Delete={"Objects": chunk})
        self.client.delete_bucket(Bucket=self.name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_s3(server: S3Server, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"moto_server exited with {server.process.returncode} before answering on "
                f"{server.endpoint}:\n{server.log_tail()}"
            )
        try:  # a real S3 request: ListBuckets answers 200 once the server serves
            with urllib.request.urlopen(server.endpoint_url + "/", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"moto_server did not answer on {server.endpoint} in {timeout:.0f} s")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's standalone S3 server (``python -m moto.server``) on a free port of 127.0.0.1,
    waited for with a real request, stopped at the end of the session."""
    log = tmp_path_factory.mktemp("moto") / "moto_server.log"
    port = _free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = S3Server(process, port, log)
    try:
        _wait_for_s3(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3_bucket_factory(s3_server: S3Server) -> Iterator[Callable[[Optional[str]], S3Bucket]]:
    """Makes buckets (``make()`` or ``make("hint")``) for fixtures of a wider scope than a
    test (a server shared by a module); every bucket made is deleted at the session's end."""
    made: List[S3Bucket] = []

    def make(hint: Optional[str] = None) -> S3Bucket:
        stem = "".join(c for c in (hint or "tp").lower() if c.isalnum() or c == "-")[:30]
        made.append(S3Bucket(s3_server, f"{stem or 'tp'}-{uuid.uuid4().hex[:12]}"))
        return made[-1]

    yield make
    for bucket in made:
        with contextlib.suppress(Exception):
            bucket.delete()


@pytest.fixture
def s3_bucket(s3_bucket_factory: Callable[[Optional[str]], S3Bucket]) -> S3Bucket:
    """A fresh bucket with its own made-up credentials (see :class:`S3Bucket`)."""
    return s3_bucket_factory(None)
