"""tritonpy probe against a real tritonserver: a healthy repository (a plain
TritonPythonModel, a tritonpy model with a tp.Image input, an ensemble over it) answers over
HTTP and gRPC; a model whose stub process is killed stays READY in Triton but fails the probe,
named with its ensemble; reloading it through the repository API makes the probe pass again.

The server is a plain, unsupervised one (heal=False), in explicit model-control mode so the
repository API can reload a model.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from tritonpy.cli import main
from tritonpy.server import TritonServer

pytestmark = pytest.mark.integration

CONFORMANCE_MODELS = Path(__file__).parent / "conformance_models"

ENSEMBLE = """name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input { name: "IMAGE" data_type: TYPE_STRING dims: [ 1 ] }
output { name: "SHAPE" data_type: TYPE_INT32 dims: [ 3 ] }
ensemble_scheduling {
  step {
    model_name: "cf_image"
    model_version: -1
    input_map { key: "IMAGE" value: "IMAGE" }
    output_map { key: "SHAPE" value: "SHAPE" }
  }
}
"""


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = repository_builder(tmp_path_factory.mktemp("probe") / "repo", "add_sub")
    repository_builder(repo, "cf_image", source=CONFORMANCE_MODELS)
    (repo / "pipeline" / "1").mkdir(parents=True)
    (repo / "pipeline" / "config.pbtxt").write_text(ENSEMBLE)
    return triton_server_factory(
        repo,
        heal=False,  # a plain server: a dead stub stays dead
        extra_args=["--model-control-mode=explicit", "--load-model=*"],
    )


def run_probe(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Dict[str, Any]]:
    status = main(["probe", *argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


def by_name(document: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {m["name"]: m for m in document["models"]}


def stub_pids(server: TritonServer, model: str) -> List[int]:
    """The triton_python_backend_stub children of the server whose command line runs
    ``model``'s model.py."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # exited meanwhile
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if (
            parent == server.pid
            and argv[0].endswith(b"triton_python_backend_stub")
            and any(f"/{model}/".encode() in arg for arg in argv[1:])
        ):
            found.append(int(entry))
    return found


def model_ready(server: TritonServer, model: str) -> bool:
    try:
        with urllib.request.urlopen(f"{server.http_url}/v2/models/{model}/ready") as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def test_a_healthy_repository_answers_over_http_and_grpc(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in (server.http_url, f"grpc://{server.grpc_url}"):
        status, document = run_probe(capsys, "--url", url, "--timeout", "5")
        assert status == 0, document
        models = by_name(document)
        assert sorted(models) == ["add_sub", "cf_image", "pipeline"]
        assert models["add_sub"]["status"] == "OK"
        # the image input refuses b"0" (INVALID_ARG from the model): the stub ran, it answered
        for name in ("cf_image", "pipeline"):
            assert (models[name]["answered"], models[name]["status"]) == (True, "INVALID_ARG")
            assert "expected an encoded image" in models[name]["message"]
    # gRPC's host:port form needs --protocol (a bare host:port is HTTP)
    status, document = run_probe(
        capsys, "--url", server.grpc_url, "--protocol", "grpc", "-m", "add_sub"
    )
    assert status == 0 and [m["name"] for m in document["models"]] == ["add_sub"]


def test_a_killed_stub_stays_ready_fails_the_probe_and_a_reload_heals_it(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (pid,) = stub_pids(server, "cf_image")
    os.kill(pid, signal.SIGKILL)
    # Triton still says READY: the server, and the model itself
    assert server.is_ready() and model_ready(server, "cf_image")

    status = main(["probe", "--url", server.http_url, "--timeout", "5"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    failed = {line.split()[1]: line for line in out if line.startswith("FAIL")}
    assert sorted(failed) == ["cf_image", "pipeline"]
    assert failed["cf_image"].endswith(
        "did not answer (listed READY): [INTERNAL] Stub process 'cf_image_0' is not healthy."
    )
    assert "Stub process 'cf_image_0' is not healthy." in failed["pipeline"]
    assert out[-1] == f"1 of 3 model(s) answered at {server.http_url}"
    status, document = run_probe(capsys, "--url", f"grpc://{server.grpc_url}", "-m", "cf_image")
    assert status == 1 and document["models"][0]["status"] == "INTERNAL"

    request = urllib.request.Request(
        f"{server.http_url}/v2/repository/models/cf_image/load", data=b"{}", method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        assert resp.status == 200
    assert stub_pids(server, "cf_image") not in ([], [pid])  # a new stub
    status, document = run_probe(capsys, "--url", server.http_url)
    assert status == 0, document
    assert all(m["answered"] for m in document["models"])
