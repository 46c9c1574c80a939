"""tritonpy probe on every kind of model, against a real tritonserver (24.10): decoupled models
(NVIDIA's raw ``square``, a tritonpy streaming model, an ensemble over ``square``) answer on a
stream over gRPC and over HTTP ``generate_stream``; sequence models (direct and oldest
strategies, an ensemble over one, a decoupled one) get a one-request sequence with a fresh
correlation id; BLS callers (raw and tritonpy, plain and streaming) and ensembles answer through
their callees and members. Then every stub is SIGKILLed: each kind FAILs, an ensemble naming
its member, a BLS caller its callee.

The judging rule is checked on the real server's own messages: its refusals before any model
ran (no correlation id, no START, an unknown input, a wrong shape, a decoupled model over a
plain request) are told from a model's own INVALID_ARG.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.cli import main
from tritonpy.client import InferClient, SequenceControl, open_stream, stream_infer
from tritonpy.export._manifests import PROBE_COMMAND
from tritonpy.probe._diagnosis import server_refused
from tritonpy.server import TritonServer

pytestmark = pytest.mark.integration

HERE = Path(__file__).parent
KINDS = HERE / "kind_models"
#: tritonpy BLS callers (a plain one, a streaming one) and their callees
TRITONPY_BLS = ["cf_bls_relay", "cf_bls_router", "cf_target_scale", "cf_target_words"]
HEALTHY = [
    "cf_bls_relay",
    "cf_bls_router",
    "cf_stream",
    "cf_target_scale",
    "cf_target_words",
    "kind_bls_callee",
    "kind_bls_caller",
    "kind_ens_plain",
    "kind_ens_seq",
    "kind_ens_square",
    "kind_seq_stream",
    "seq_sum_direct",
    "seq_sum_oldest",
    "square",
]


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("kinds") / "repo"
    repository_builder(repo, "square", source=HERE.parent / "runtime" / "nvidia_examples")
    repository_builder(repo, "cf_stream", source=HERE / "streaming_models")
    repository_builder(repo, *TRITONPY_BLS, source=HERE / "bls_models")
    names = [n for n in HEALTHY if n.startswith(("kind_", "seq_"))] + ["seq_string_corrid"]
    repository_builder(repo, *names, source=KINDS)
    return triton_server_factory(
        repo, heal=False, extra_args=["--model-control-mode=explicit", "--load-model=*"]
    )


def run_probe(capsys: pytest.CaptureFixture[str], *argv: str) -> Tuple[int, Dict[str, Any]]:
    status = main(["probe", *argv, "--json"])
    document = json.loads(capsys.readouterr().out)
    return status, {m["name"]: m for m in document["models"]}


def urls(server: TritonServer) -> List[str]:
    return [f"grpc://{server.grpc_url}", server.http_url]


def test_every_kind_answers_over_grpc(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, models = run_probe(capsys, "--url", f"grpc://{server.grpc_url}", *model_args())
    assert status == 0, models
    assert sorted(models) == HEALTHY
    assert all(m["answered"] and m["status"] == "OK" for m in models.values()), models
    # square gets IN = 0: no response, only the final flag; cf_stream gets "0": one word
    assert models["square"]["request"] == "stream: the final flag"
    assert models["kind_ens_square"]["request"] == "stream: the final flag"
    assert models["cf_stream"]["request"] == "stream: a response"
    assert models["kind_seq_stream"]["request"].startswith("stream: a response in sequence ")
    for name in ("seq_sum_direct", "seq_sum_oldest", "kind_ens_seq"):
        assert models[name]["request"].startswith("infer in sequence "), models[name]
        assert models[name]["request"].endswith(" (START and END)")
    assert models["kind_bls_caller"]["request"] == "infer"


def test_over_http_decoupled_models_stream_by_generate_stream(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, models = run_probe(capsys, "--url", server.http_url, *model_args())
    assert status == 1  # kind_seq_stream: generate_stream carries no correlation id
    failed = [n for n, m in models.items() if not m["answered"]]
    assert failed == ["kind_seq_stream"]
    assert models["kind_seq_stream"]["status"] == "REQUEST"
    assert "HTTP generate_stream carries no correlation id" in models["kind_seq_stream"]["message"]
    assert "grpc://HOST:8001" in models["kind_seq_stream"]["message"]
    assert models["square"]["request"] == "stream: the final flag"
    assert models["cf_stream"]["request"] == "stream: a response"
    assert models["seq_sum_direct"]["request"].startswith("infer in sequence ")
    # the text form says it in one line
    assert main(["probe", "--url", server.http_url, "-m", "kind_seq_stream"]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("FAIL  kind_seq_stream  -  did not answer (listed READY): [REQUEST] ")
    assert "over gRPC (grpc://HOST:8001)" in line


def test_a_string_corrid_control_gets_a_string_id_which_2410_refuses(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in urls(server):
        status, models = run_probe(capsys, "--url", url, "-m", "seq_string_corrid")
        result = models["seq_string_corrid"]
        assert status == 1 and result["refused_by_server"], result
        assert result["request"].startswith("infer in sequence 'tritonpy-")
        assert "unexpected number of string elements" in result["message"]
    assert main(["probe", "--url", server.http_url, "-m", "seq_string_corrid"]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert "not probed (listed READY): the server refused the probe's request before" in line


def test_the_exports_liveness_command_passes_a_healthy_repository_of_every_kind(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # without the TYPE_STRING CORRID model, which 24.10 refuses every request to
    unload = urllib.request.Request(
        f"{server.http_url}/v2/repository/models/seq_string_corrid/unload", data=b"{}"
    )
    with urllib.request.urlopen(unload, timeout=60) as reply:
        assert reply.status == 200
    argv = list(PROBE_COMMAND[1:])
    assert argv[argv.index("--url") + 1] == "grpc://localhost:8001"
    argv[argv.index("--url") + 1] = f"grpc://{server.grpc_url}"
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"{len(HEALTHY)} of {len(HEALTHY)} model(s) answered at {argv[2]}"


def test_the_servers_own_refusals_are_told_from_a_models(server: TritonServer) -> None:
    one = np.array([[1]], np.int32)
    for url in urls(server):
        client = InferClient(url, timeout=10)
        try:
            refusals = [
                error_of(client.infer, "seq_sum_direct", {"VALUE": one}),
                error_of(client.infer, "kind_ens_seq", {"VALUE": one}),
                error_of(
                    client.infer, "seq_sum_oldest", {"VALUE": one}, sequence=SequenceControl(77)
                ),
                error_of(client.infer, "kind_bls_callee", {"IN": np.zeros(3, np.int32)}),
                error_of(client.infer, "kind_bls_callee", {}),
                error_of(client.infer, "square", {"IN": np.zeros(1, np.int32)}),
            ]
        finally:
            client.close()
        assert [e.code for e in refusals[:5]] == ["INVALID_ARG"] * 5
        assert refusals[5].code == "UNSUPPORTED"
        assert all(server_refused(e.message) for e in refusals), refusals
        square = stream_infer(url, "square", {"IN": np.array([-1], np.int32)}, timeout=10)
        words = stream_infer(url, "cf_stream", {"TEXT": np.array([b"BAD"], object)}, timeout=10)
        for own in (square.error, words.error):
            assert own is not None and not server_refused(own.message), own


def test_leaving_a_stream_early_cancels_the_rest(server: TritonServer) -> None:
    # what the probe does after a first response: a slow stream (0.5 s a word, 3.5 s in all)
    # is not read to its end
    words = {"TEXT": np.array([b"SLOW a b c d e f g"], object)}
    for url in urls(server):
        stream = open_stream(url, "cf_stream", words, timeout=10)
        began = time.perf_counter()
        parts = iter(stream)
        assert next(parts).outputs["WORD"].tolist() == [b"SLOW"]
        parts.close()  # what leaving a for loop does
        assert time.perf_counter() - began < 2.0
        assert (stream.count, stream.result.final) == (1, False)
        assert stream.result.cancelled is url.startswith("grpc")


def test_every_kind_fails_once_its_stub_is_killed(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for model in ("square", "cf_stream", "seq_sum_direct", "seq_sum_oldest", "kind_bls_callee"):
        kill_stub(server, model)
    kill_stub(server, "kind_seq_stream")
    kill_stub(server, "cf_target_scale")
    kill_stub(server, "cf_target_words")
    for url in urls(server):
        status, models = run_probe(capsys, "--url", url, *model_args())
        assert status == 1
        alive = sorted(n for n, m in models.items() if m["answered"])
        assert alive == [], models
        for name in ("square", "cf_stream", "seq_sum_direct", "seq_sum_oldest"):
            assert models[name]["dead_stub"] == name and models[name]["dead_stub_role"] is None
            assert "is not healthy" in models[name]["message"]
        for ensemble, member in (
            ("kind_ens_square", "square"),
            ("kind_ens_seq", "seq_sum_direct"),
            ("kind_ens_plain", "kind_bls_callee"),
        ):
            assert (models[ensemble]["dead_stub"], models[ensemble]["dead_stub_role"]) == (
                member,
                "member",
            )
        for caller, callee in (
            ("kind_bls_caller", "kind_bls_callee"),
            ("cf_bls_router", "cf_target_scale"),
            ("cf_bls_relay", "cf_target_words"),
        ):
            found = (models[caller]["dead_stub"], models[caller]["dead_stub_role"])
            assert found == (callee, "callee"), models[caller]
        # a tritonpy caller re-raises the call's error naming the callee, one code only
        assert models["cf_bls_router"]["message"].startswith(
            "call to model 'cf_target_scale' failed: Stub process 'cf_target_scale_0"
        )
    assert main(["probe", "--url", f"grpc://{server.grpc_url}", *model_args()]) == 1
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()}
    assert "the stub process of its ensemble member 'square' is dead: [" in lines["kind_ens_square"]
    assert (
        "the stub process of its BLS callee 'kind_bls_callee' is dead: [INTERNAL] "
        in (lines["kind_bls_caller"])
    )
    assert lines["seq_sum_direct"].endswith(
        "did not answer (listed READY): [INTERNAL] Stub process 'seq_sum_direct_0_0' is not "
        "healthy."
    )


def model_args() -> List[str]:
    return [arg for name in HEALTHY for arg in ("-m", name)]


def error_of(call: Callable[..., Any], *args: Any, **kwargs: Any) -> TritonRequestError:
    with pytest.raises(TritonRequestError) as caught:
        call(*args, **kwargs)
    return caught.value


def kill_stub(server: TritonServer, model: str) -> None:
    """SIGKILL the triton_python_backend_stub child of the server that runs ``model``."""
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if (
            parent == server.pid
            and argv[0].endswith(b"triton_python_backend_stub")
            and any(f"/{model}/".encode() in arg for arg in argv[1:])
        ):
            os.kill(int(entry), signal.SIGKILL)
            killed += 1
    assert killed == 1, f"{model}: {killed} stubs"
