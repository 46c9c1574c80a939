"""``tritonpy probe --repository`` against the real tritonserver serving a bucket of SeaweedFS's S3
server that ``tritonpy publish`` filled: the bucket's models are the probe set, so a model
the server has not loaded (explicit model control, unloaded through the repository API) and
one served in an older version than the bucket's newest (published with ``--new-version``,
not yet rolled out) each fail by name; once loaded again, the probe passes.

The repository holds an ensemble whose version folder is empty: publish writes it as a folder
marker (``pipe/1/``), which tritonserver's S3 filesystem lists as a directory
(core@r24.10:src/filesystem/implementations/s3.h ``GetDirectoryContents`` skips the marker
itself), so the ensemble loads from the bucket.
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest
import tritonclient.http as httpclient

from tests.integration.conftest import make_repository
from tritonpy.cli import main
from tritonpy.probe import probe
from tritonpy.storage import download_repository, publish

pytestmark = pytest.mark.integration

PIPE = """name: "pipe"
platform: "ensemble"
max_batch_size: 0
input [
  { name: "A", data_type: TYPE_FP32, dims: [ 4 ] },
  { name: "B", data_type: TYPE_FP32, dims: [ 4 ] }
]
output [ { name: "SUM", data_type: TYPE_FP32, dims: [ 4 ] } ]
ensemble_scheduling { step [ {
  model_name: "add_sub"
  model_version: -1
  input_map { key: "INPUT0" value: "A" }
  input_map { key: "INPUT1" value: "B" }
  output_map { key: "OUTPUT0" value: "SUM" }
} ] }
"""


def repository_api(server: Any, model: str, action: str) -> None:
    """``load`` or ``unload`` ``model`` through Triton's repository API (HTTP)."""
    request = urllib.request.Request(
        f"{server.http_url}/v2/repository/models/{model}/{action}", data=b"{}", method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.status == 200


def index(server: Any, model: str) -> List[Dict[str, str]]:
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    try:
        entries: List[Dict[str, str]] = client.get_model_repository_index()
    finally:
        client.close()
    return [e for e in entries if e["name"] == model]


def ready_versions(server: Any, model: str) -> List[str]:
    return sorted(e["version"] for e in index(server, model) if e["state"] == "READY")


def unloaded(server: Any, model: str, timeout: float = 60.0) -> None:
    """The repository API's unload returns before the model is gone: wait for it."""
    deadline = time.monotonic() + timeout
    while any(e.get("state") != "UNAVAILABLE" for e in index(server, model)):
        assert time.monotonic() < deadline, index(server, model)
        time.sleep(0.1)


def test_probe_with_the_bucket_names_a_model_not_loaded_and_one_not_rolled_out(
    tmp_path: Path,
    s3_bucket: Any,
    monkeypatch: pytest.MonkeyPatch,
    triton_server_factory: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in s3_bucket.env.items():  # the probe reads the bucket as the server does
        monkeypatch.setenv(key, value)
    repo = make_repository(tmp_path / "repo", "add_sub", "echo_text")
    (repo / "pipe" / "1").mkdir(parents=True)
    (repo / "pipe" / "1" / ".gitkeep").touch()
    (repo / "pipe" / "config.pbtxt").write_text(PIPE)
    url = s3_bucket.url("fleet/models")
    assert "pipe/1/" in publish(repo, url).uploaded

    server = triton_server_factory(url, env=s3_bucket.env, reloadable=True, heal=False)
    assert server.models_ready() == ["add_sub", "echo_text", "pipe"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    a, b = np.arange(4, dtype=np.float32), np.full(4, 10, dtype=np.float32)
    inputs = [httpclient.InferInput(n, [4], "FP32") for n in ("A", "B")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    np.testing.assert_array_equal(client.infer("pipe", inputs).as_numpy("SUM"), a + b)
    client.close()

    healthy = probe(server.http_url, repository=url)
    assert [(r.name, r.status) for r in healthy.results] == [
        ("add_sub", "OK"),
        ("echo_text", "OK"),
        ("pipe", "OK"),
    ], healthy.render_text()

    repository_api(server, "echo_text", "unload")
    unloaded(server, "echo_text")
    (repo / "add_sub" / "1" / "model.py").write_text(
        (repo / "add_sub" / "1" / "model.py").read_text() + "\n# version 2\n"
    )
    assert publish(repo, url, models=["add_sub"], new_version=True).new_versions == {"add_sub": 2}
    stale = probe(server.http_url, repository=url)
    assert [(r.name, r.answered, r.status) for r in stale.results] == [
        ("add_sub", False, "OLD_VERSION"),
        ("echo_text", False, "NOT_LOADED"),
        ("pipe", True, "OK"),
    ], stale.render_text()
    assert stale.render_text().splitlines()[:2] == [
        "FAIL  add_sub  -  serves version 1, the repository's newest is 2: roll it out with "
        "tritonpy rollout --model add_sub",
        "FAIL  echo_text  -  not loaded (state UNAVAILABLE: unloaded); the repository "
        f"{url} holds it: load it (tritonpy rollout --model echo_text) or take it out of the "
        "repository",
    ]
    assert main(["probe", "--url", server.http_url, "--repository", url]) == 1
    out = capsys.readouterr().out
    assert out.endswith(f"1 of 3 model(s) answered at {server.http_url}\n"), out

    # the old behaviour without --repository: every READY model, none of the above seen
    assert probe(server.http_url).ok

    # loaded again, the server reads the bucket again: version 2 serves, the probe passes
    repository_api(server, "add_sub", "load")
    assert ready_versions(server, "add_sub") == ["2"]
    rolled = probe(server.http_url, ["add_sub", "pipe"], repository=url)
    assert rolled.ok, rolled.render_text()

    # a local directory works the same way (here a copy of the bucket)
    copy = download_repository(url, tmp_path / "copy")
    local = probe(server.http_url, repository=copy.path)
    assert [(r.name, r.status) for r in local.results] == [
        ("add_sub", "OK"),
        ("echo_text", "NOT_LOADED"),
        ("pipe", "OK"),
    ], local.render_text()
