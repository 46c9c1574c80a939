"""What Triton answers when a model exits (``sys.exit``) or ends its own process
(``os._exit``) in execute, and that the harness says the same (its side:
tests/testing/test_process_exit.py)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tritonpy._runtime.errors import TritonRequestError
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness, ModelProcessDiedError

pytestmark = pytest.mark.integration

CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 0
input {{ name: "X" data_type: TYPE_FP32 dims: [1] }}
output {{ name: "Y" data_type: TYPE_FP32 dims: [1] }}
"""
MODEL = """import os
import sys


class TritonPythonModel:
    def execute(self, requests):
        {body}
"""


def _model(root: Path, name: str, body: str) -> Path:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name))
    (root / name / "1" / "model.py").write_text(MODEL.format(body=body))
    return root / name


def _ask(client: httpclient.InferenceServerClient, name: str) -> str:
    data = httpclient.InferInput("X", [1], "FP32")
    data.set_data_from_numpy(np.ones(1, np.float32))
    with pytest.raises(InferenceServerException) as caught:
        client.infer(name, [data], timeout=30)
    return str(caught.value.message())


def _paths_out(message: str) -> str:
    return re.sub(r"\S*/(model\.py)", r"\1", message).strip()


def test_exit_and_process_end_in_execute_real_vs_harness(
    tmp_path: Path, triton_server_factory: Callable[..., TritonServer]
) -> None:
    repo = tmp_path / "repo"
    _model(repo, "sysexit", "sys.exit(3)")
    _model(repo, "osexit", "os._exit(3)")
    options: Any = {}
    if "heal" in inspect.signature(TritonServer).parameters:
        options["heal"] = False  # the plain server's behaviour is what the harness mirrors
    server = triton_server_factory(repo, **options)
    client = httpclient.InferenceServerClient(server.http_url.split("://", 1)[-1])

    real_exit = [_ask(client, "sysexit") for _ in range(2)]
    real_gone = [_ask(client, "osexit") for _ in range(2)]
    assert client.is_model_ready("osexit")  # the dead model still says READY

    with ModelHarness(repo / "sysexit") as model:
        fake_exit = []
        for _ in range(2):
            with pytest.raises(TritonRequestError) as caught:
                model.infer({"X": np.ones(1, np.float32)})
            fake_exit.append(caught.value.message)
    assert [_paths_out(m) for m in fake_exit] == [_paths_out(m) for m in real_exit]
    assert "message: SystemExit: 3" in real_exit[0]

    assert real_gone == ["Stub process 'osexit_0' is not healthy."] * 2
    with ModelHarness(repo / "osexit") as model:
        for _ in range(2):
            with pytest.raises(ModelProcessDiedError) as died:
                model.infer({"X": np.ones(1, np.float32)})
            assert repr(real_gone[0]) in str(died.value)
