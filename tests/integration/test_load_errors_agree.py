"""The same broken models in the real tritonserver (2.51, r24.10) and under tritonpy: the
server's reason for refusing each one is what ModelHarness (or ``tritonpy config``) says.

- a model.py that does not parse, one that imports a missing package: ModelHarness raises
  ModelLoadError with the server's ``Type: message``;
- ``backend: "pyhton"`` and an ``EXECUTION_ENV_PATH`` naming a missing archive: ModelHarness
  raises ModelLoadError with the server's message, word for word;
- a config.pbtxt whose name differs from its directory: ``tritonpy config`` refuses it with
  the server's message instead of renaming it.

One server start per model: the server reports the first model that fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest

from tritonpy.config._declarations import ModelNameError, sync_config
from tritonpy.server import ModelLoadError, TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

MakeRepo = Callable[..., Path]

DECLARED = """\
import tritonpy as tp


class Double(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1])}
    outputs = {"Y": tp.Tensor("FP32", [1])}

    def infer(self, X):
        return {"Y": X * 2}


TritonPythonModel = Double
"""

CONFIGS = {
    "typo_backend": 'name: "typo_backend"\nbackend: "pyhton"\n',
    "missing_env": (
        'name: "missing_env"\nbackend: "python"\nparameters { key: "EXECUTION_ENV_PATH" '
        'value { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }\n'
    ),
    "renamed": 'name: "other_name"\nbackend: "python"\n',
}


def broken_repository(tmp_path: Path, model: str, repository_builder: MakeRepo) -> Path:
    """A repository holding the one broken model ``model``."""
    repo = tmp_path / "repo"
    if model not in CONFIGS:  # stored among the integration models
        return repository_builder(repo, model)
    (repo / model / "1").mkdir(parents=True)
    (repo / model / "1" / "model.py").write_text(DECLARED)
    (repo / model / "config.pbtxt").write_text(CONFIGS[model])
    return repo


def server_refusal(repo: Path, model: str) -> str:
    """Why the real server refused ``model``: its status text without the code's prefix
    ("Internal: ", "Invalid argument: ") and without the traceback ("At: ...")."""
    server = TritonServer(repo, startup_timeout=120)
    with pytest.raises(ModelLoadError) as caught:
        server.start()
    assert not server.running
    assert list(caught.value.failures) == [model]
    text = caught.value.failures[model].split("\n\nAt:")[0].strip()
    return re.sub(r"^(Internal|Invalid argument): ", "", text)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("broken_syntax", "SyntaxError: expected ':' (model.py, line 5)"),
        ("missing_package", "ModuleNotFoundError: No module named 'tritonpy_no_such_package_xyz'"),
        (
            "typo_backend",
            "unable to find backend library for backend 'pyhton', try specifying runtime on "
            "the model configuration.",
        ),
        ("missing_env", "Failed to get the canonical path for {model_dir}/env.tar.gz."),
    ],
)
def test_the_harness_refuses_what_the_server_refuses_with_its_words(
    tmp_path: Path, repository_builder: MakeRepo, model: str, expected: str
) -> None:
    repo = broken_repository(tmp_path, model, repository_builder)
    refused = server_refusal(repo, model)
    assert refused == expected.format(model_dir=repo / model)
    with pytest.raises(ModelLoadError) as caught:
        ModelHarness(repo / model)
    assert caught.value.failures == {model: refused}
    assert f"model {model!r} failed to load: " in str(caught.value)
    assert refused in str(caught.value)


def test_config_refuses_a_name_the_server_refuses_instead_of_renaming(
    tmp_path: Path, repository_builder: MakeRepo
) -> None:
    repo = broken_repository(tmp_path, "renamed", repository_builder)
    refused = server_refusal(repo, "renamed")
    assert refused == (
        "unexpected directory name 'renamed' for model 'other_name', directory name must "
        "equal model name"
    )
    with pytest.raises(ModelNameError) as caught:
        sync_config(repo / "renamed")
    assert refused in str(caught.value)
    assert (repo / "renamed" / "config.pbtxt").read_text() == CONFIGS["renamed"]
    # the fix it offers makes the model load in the real server
    sync_config(repo / "renamed", fix_name=True)
    server = TritonServer(repo, startup_timeout=120)
    try:
        server.start()
        assert server.models_ready() == ["renamed"]
    finally:
        server.stop()
