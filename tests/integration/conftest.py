"""Fixtures that start a real tritonserver (the nvidia-pytriton wheel's) for integration tests.

- ``make_repository(dest, *names)``: copy model directories from ``tests/integration/models``
  (or another ``source``) into ``dest``; a ``model.py.txt`` becomes ``model.py`` (models that
  must not parse are stored that way so linters skip them).
- ``triton_server_factory``: ``start(repository, **TritonServer kwargs) -> TritonServer``; every
  server it started is stopped once the module's tests are done (not at the end of the
  session: a dozen servers, their stubs and healer threads running beside every later test
  slowed the suite and made its timing tests flaky).
- ``triton_server``: one session server on ``add_sub`` (FP32 [4]) and ``echo_text`` (batched
  BYTES).

Example::

    def test_my_model(triton_server_factory, tmp_path):
        repo = make_repository(tmp_path / "repo", "add_sub")
        server = triton_server_factory(repo)
        assert server.models_ready() == ["add_sub"]
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator, List, Union

import pytest

from tritonpy.server import TritonServer

MODELS_DIR = Path(__file__).parent / "models"

StartServer = Callable[..., TritonServer]


def make_repository(
    dest: Union[str, Path], *names: str, source: Union[str, Path] = MODELS_DIR
) -> Path:
    """Build a model repository in ``dest`` from the model directories ``names`` of
    ``source``; return ``dest``."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = dest / name
        shutil.copytree(Path(source) / name, target, ignore=shutil.ignore_patterns("__pycache__"))
        for renamed in target.rglob("model.py.txt"):
            renamed.rename(renamed.with_name("model.py"))
    return dest


@pytest.fixture(scope="module")
def triton_server_factory() -> Iterator[StartServer]:
    """``start(repository, **kwargs)`` starts a :class:`TritonServer` and returns it once all
    models are ready; all are stopped when the module's tests are done."""
    started: List[TritonServer] = []

    def start(repository: Union[str, Path], **kwargs: Any) -> TritonServer:
        server = TritonServer(repository, **kwargs)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture(scope="session")
def triton_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    """A session-wide server on ``add_sub`` and ``echo_text``."""
    repo = make_repository(tmp_path_factory.mktemp("repo"), "add_sub", "echo_text")
    with TritonServer(repo) as server:
        yield server


@pytest.fixture(scope="session")
def repository_builder() -> Callable[..., Path]:
    """:func:`make_repository` as a fixture (conftest modules are not importable by name)."""
    return make_repository


def skip_outside_ci(reason: str) -> None:
    """Skip a test whose prerequisite this machine lacks, saying why and how to fix it; under
    CI (CI=true) fail instead: CI must run every integration test, never skip it silently."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true, but this test cannot run here: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def unavailable() -> Callable[[str], None]:
    """:func:`skip_outside_ci` as a fixture (conftest modules are not importable by name)."""
    return skip_outside_ci
