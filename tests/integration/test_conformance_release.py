"""The harness at release 24.10 against the real 24.10 server (issue 31 item 3): every 24.10
behaviour the fake claims about the APIs later releases added is the server's. The same
models get the same requests through ModelHarness(release="24.10") and tritonserver 2.51:

- ``InferenceResponse(parameters=...)`` (by keyword, by position, as a JSON string) is
  pybind11's TypeError, with the same text (object addresses aside); the response has no
  ``parameters`` attribute;
- a decoupled BLS call's ``ResponseIterator`` has no ``cancel``, and yields the callee's
  responses and an empty final one;
- a model's ``is_ready()`` is never called, the model reads ready whatever it would answer;
- a name with ``#`` loads (25.08 and later would refuse it), one with ``$`` does not.

Releases after 24.10 cannot be served here (no newer tritonserver installs); the harness's
behaviour for them cites the python_backend sources (tests/testing/test_release_surface.py).
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any, List

import numpy as np
import pytest

from tritonpy.client import InferClient
from tritonpy.testing import ModelHarness, ModelLoadError, ReleaseSurfaceWarning, RepositoryHarness

pytestmark = pytest.mark.integration

PROBE = """
import numpy as np
import triton_python_backend_utils as pb_utils


def attempt(fn):
    try:
        return "ok: " + repr(fn())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


class TritonPythonModel:
    def initialize(self, args):
        self.ready_calls = 0

    def is_ready(self):
        self.ready_calls += 1
        return False

    def execute(self, requests):
        tensor = pb_utils.Tensor("T", np.array([1], np.int32))
        texts = [
            attempt(lambda: pb_utils.InferenceResponse(output_tensors=[tensor], parameters={})),
            attempt(lambda: pb_utils.InferenceResponse([tensor], None, {"a": 1})),
            attempt(lambda: pb_utils.InferenceResponse(parameters="{}")),
            attempt(lambda: hasattr(pb_utils.InferenceResponse([]), "parameters")),
            attempt(lambda: pb_utils.InferenceResponse([]).parameters()),
        ]
        call = pb_utils.InferenceRequest(
            model_name="rl_stream",
            inputs=[pb_utils.Tensor("X", np.array([2], np.int32))],
            requested_output_names=["Y"],
        )
        iterator = call.exec(decoupled=True)
        texts += [
            type(iterator).__name__,
            repr(hasattr(iterator, "cancel")),
            attempt(lambda: iterator.cancel()),
            repr([len(r.output_tensors()) for r in iterator]),
            repr(self.ready_calls),
            repr(hasattr(pb_utils, "ResponseIterator")),
        ]
        out = pb_utils.Tensor("TEXT", np.array([t.encode() for t in texts], object))
        return [pb_utils.InferenceResponse([out]) for _ in requests]
"""

STREAM = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            count = int(pb_utils.get_input_tensor_by_name(request, "X").as_numpy()[0])
            for i in range(count):
                y = pb_utils.Tensor("Y", np.array([i], np.int32))
                sender.send(pb_utils.InferenceResponse([y]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
"""

ECHO = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())]
            )
            for r in requests
        ]
"""


def add_model(repo: Path, name: str, code: str, output: str, decoupled: bool = False) -> None:
    kind = "TYPE_STRING" if output == "TEXT" else "TYPE_INT32"
    policy = "model_transaction_policy { decoupled: true }\n" if decoupled else ""
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n{policy}'
        'input [{ name: "X", data_type: TYPE_INT32, dims: [1] }]\n'
        f'output [{{ name: "{output}", data_type: {kind}, dims: [-1] }}]\n'
    )
    (repo / name / "1" / "model.py").write_text(code)


def same(texts: List[Any]) -> List[str]:
    """The probe's answers with object addresses (which differ from run to run) masked."""
    decoded = [t.decode() if isinstance(t, bytes) else str(t) for t in texts]
    return [re.sub(r"0x[0-9a-f]+", "0x…", t) for t in decoded]


def model_ready(server: Any, name: str) -> int:
    with urllib.request.urlopen(f"{server.http_url}/v2/models/{name}/ready", timeout=10) as r:
        return int(r.status)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, triton_server_factory: Any) -> Any:
    repo = tmp_path_factory.mktemp("release") / "repo"
    add_model(repo, "rl_probe", PROBE, "TEXT")
    add_model(repo, "rl_stream", STREAM, "Y", decoupled=True)
    add_model(repo, "rl_a#b", ECHO, "Y")
    return repo, triton_server_factory(repo)


def test_the_24_10_surface_is_the_servers(served: Any) -> None:
    repo, server = served
    client = InferClient(server.http_url, "http")
    x = {"X": np.array([1], np.int32)}
    real = same(client.infer("rl_probe", x)[0].array.tolist())
    with pytest.warns(ReleaseSurfaceWarning, match="never calls"):
        with RepositoryHarness(repo, release="24.10") as harness:
            fake = same(harness.infer("rl_probe", x)["TEXT"].tolist())
    assert fake == real
    # what the server answered, pinned: the fake must not drift with it
    assert real[0].startswith("TypeError: __init__(): incompatible constructor arguments.")
    assert real[3:] == [
        "ok: False",
        "AttributeError: 'c_python_backend_utils.InferenceResponse' object has no attribute "
        "'parameters'",
        "ResponseIterator",
        "False",
        "AttributeError: 'c_python_backend_utils.ResponseIterator' object has no attribute "
        "'cancel'",
        "[1, 1, 0]",
        "0",
        "False",
    ]


def test_is_ready_is_never_called_on_24_10(served: Any) -> None:
    repo, server = served
    client = InferClient(server.http_url, "http")
    x = {"X": np.array([1], np.int32)}
    assert model_ready(server, "rl_probe") == 200  # the model's is_ready() would say False
    assert same(client.infer("rl_probe", x)[0].array.tolist())[-2] == "0"
    with pytest.warns(ReleaseSurfaceWarning):
        harness = ModelHarness(repo / "rl_probe", targets={"rl_stream": repo / "rl_stream"})
    with harness:
        assert harness.is_ready()
        assert same(harness.infer(x)["TEXT"].tolist())[-2] == "0"


def test_a_name_with_a_hash_loads_on_24_10(served: Any) -> None:
    repo, server = served
    assert "rl_a#b" in server.models_ready()
    with pytest.warns(ReleaseSurfaceWarning, match="25.08 and later refuse"):
        ModelHarness(repo / "rl_a#b").close()


def test_a_name_with_a_dollar_fails_to_load_on_24_10(
    tmp_path: Path, triton_server_factory: Any
) -> None:
    repo = tmp_path / "repo"
    add_model(repo, "rl_a$b", ECHO, "Y")
    with pytest.raises(ModelLoadError):
        triton_server_factory(repo)  # bash expands $b: the stub looks for rl_a/1/model.py
    with pytest.raises(ModelLoadError, match=r"unquoted into a bash -c command line"):
        ModelHarness(repo / "rl_a$b")
