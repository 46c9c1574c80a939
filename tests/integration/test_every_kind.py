"""Every kind of model through every command, against the real tritonserver.

One repository holds a model of each kind Triton's Python backend serves, written the way its
users write them (raw pb_utils models as in NVIDIA's examples, and tritonpy models): plain,
batched and ragged, image, decoupled (raw and tritonpy), sequence (direct and oldest), a BLS
caller, an ensemble, a model with its own environment of another Python (3.10, with a package
the serving virtualenv lacks) and a model served in two versions. Each command (the harness,
``check``, ``config --check``, ``pack-env``, ``serve``, ``infer``, ``perf``, ``tune``,
``probe``, ``export``) runs on each kind and must work, or refuse that kind in one line that
says why and what to use instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import numpy as np
import pytest

from tritonpy.cli import main
from tritonpy.envs import pack_env
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness, ModelLoadError, RepositoryHarness

pytestmark = pytest.mark.integration

HERE = Path(__file__).parent
KINDS_DIR = HERE / "kind_models"
EXAMPLES = HERE.parent / "runtime" / "nvidia_examples"
CONFORMANCE = HERE / "conformance_models"
STREAMING = HERE / "streaming_models"
ENV_PYTHON = "3.10"
SERVING_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


@dataclass(frozen=True)
class Kind:
    """One kind of model: the model that stands for it, where it comes from, the command-line
    inputs of one request (``NAME=VALUE``), what the answer must show, and how the harness
    sends the same request."""

    model: str
    source: Path
    cli_inputs: Tuple[str, ...]
    answer: str  # a fragment of `tritonpy infer` output
    harness_inputs: Dict[str, Any] = field(default_factory=dict)
    harness_answer: Dict[str, Any] = field(default_factory=dict)
    decoupled: bool = False
    sequence: bool = False
    extra_models: Tuple[Tuple[str, Path], ...] = ()


def _png() -> bytes:
    import cv2

    ok, data = cv2.imencode(".png", np.zeros((4, 6, 3), np.uint8))
    assert ok
    return bytes(data)


I32 = np.int32
KINDS: Dict[str, Kind] = {
    "plain": Kind(
        "add_sub",
        EXAMPLES,
        ("INPUT0=[1,2,3,4]", "INPUT1=[1,1,1,1]"),
        "OUTPUT0 (FP32, shape [4]): [2.0, 3.0, 4.0, 5.0]",
        {"INPUT0": np.array([1, 2, 3, 4], np.float32), "INPUT1": np.ones(4, np.float32)},
        {"OUTPUT0": [2.0, 3.0, 4.0, 5.0]},
    ),
    "batched-ragged": Kind(
        "cf_ragged",
        CONFORMANCE,
        ("TOKENS=[3,4,5]",),
        "TOTAL (INT64, shape [1, 1]): [[12]]",
        {"TOKENS": np.array([[3, 4, 5]], np.int64)},
        {"TOTAL": [[12]]},
    ),
    "image": Kind(
        "cf_image",
        CONFORMANCE,
        ("IMAGE=@{png}",),
        "SHAPE (INT32, shape [1, 3]): [[4, 6, 3]]",
        {"IMAGE": np.array([[b"{png}"]], object)},
        {"SHAPE": [[4, 6, 3]]},
    ),
    "decoupled-raw": Kind(
        "square",
        EXAMPLES,
        ("IN=[3]",),
        "OUT (INT32, shape [1]): [9]",
        {"IN": np.array([3], I32)},
        {"OUT": [9]},
        decoupled=True,
    ),
    "decoupled-tritonpy": Kind(
        "cf_stream",
        STREAMING,
        ("TEXT=two words",),
        "WORD (BYTES, shape [1]): ['words']",
        {"TEXT": np.array([b"two words"], object)},
        {"WORD": [b"words"]},
        decoupled=True,
    ),
    "sequence-direct": Kind(
        "seq_sum_direct",
        KINDS_DIR,
        ("VALUE=[5]",),
        "SUM (INT32, shape [1, 1]): [[5]]",
        {"VALUE": np.array([[5]], I32)},
        {"SUM": [[5]]},
        sequence=True,
    ),
    "sequence-oldest": Kind(
        "seq_sum_oldest",
        KINDS_DIR,
        ("VALUE=[6]",),
        "SUM (INT32, shape [1, 1]): [[6]]",
        {"VALUE": np.array([[6]], I32)},
        {"SUM": [[6]]},
        sequence=True,
    ),
    "bls-caller": Kind(
        "kind_bls_caller",
        KINDS_DIR,
        ("IN=[4]",),
        "OUT (INT32, shape [1]): [8]",
        {"IN": np.array([4], I32)},
        {"OUT": [8]},
        extra_models=(("kind_bls_callee", KINDS_DIR),),
    ),
    "ensemble": Kind(
        "kind_ens_plain",
        KINDS_DIR,
        ("IN=[5]",),
        "OUT (INT32, shape [1]): [10]",
        {"IN": np.array([5], I32)},
        {"OUT": [10]},
        extra_models=(("kind_bls_callee", KINDS_DIR),),
    ),
    "own-environment": Kind(
        "kind_own_env",
        KINDS_DIR,
        ("X=[1,2,3]",),
        "PYTHON (BYTES, shape [1, 1]): [['3.10']]",
    ),
    "versions": Kind(
        "kind_versions",
        KINDS_DIR,
        ("X=[1,2]",),
        "Y (FP32, shape [1, 2]): [[2.0, 4.0]]",  # the newest version (2) answers by default
        {"X": np.array([[1, 2]], np.float32)},
        {"Y": [[2.0, 4.0]]},
    ),
}
KIND_NAMES = list(KINDS)


def _models() -> Dict[str, Path]:
    models: Dict[str, Path] = {}
    for kind in KINDS.values():
        models[kind.model] = kind.source
        models.update(dict(kind.extra_models))
    return models


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    folder = tmp_path_factory.mktemp("assets")
    (folder / "image.png").write_bytes(_png())
    return {"png": folder / "image.png"}


@pytest.fixture(scope="module")
def repository(
    tmp_path_factory: pytest.TempPathFactory, repository_builder: Callable[..., Path]
) -> Path:
    """The repository of every kind, the own-environment model packed for Python 3.10."""
    repo = tmp_path_factory.mktemp("every_kind") / "repo"
    for name, source in _models().items():
        repository_builder(repo, name, source=source)
    serving = SERVING_PYTHON
    assert serving != ENV_PYTHON, "the own-environment kind needs a Python other than the server's"
    pack_env(
        repo / "kind_own_env",
        python=ENV_PYTHON,
        builder="local",
        server_python=serving,
        compress_level=1,
    )
    return repo


@pytest.fixture(scope="module")
def server(repository: Path, triton_server_factory: Callable[..., TritonServer]) -> TritonServer:
    # a plain server (heal=False), as in a container: a killed stub stays dead
    return triton_server_factory(repository, startup_timeout=240, heal=False)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Tuple[int, str]:
    """``tritonpy ARGV``: its exit status and everything it printed."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def one_line_refusal(text: str) -> bool:
    """A refusal a user can act on: one line (besides a usage line), saying why."""
    lines = [ln for ln in text.strip().splitlines() if ln and not ln.startswith("usage:")]
    return len(lines) == 1


# ------------------------------------------------------------------------------ serve
def test_serve_loads_every_kind(server: TritonServer) -> None:
    assert sorted(server.models_ready()) == sorted(_models())


# ---------------------------------------------------------------------------- harness
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_harness(kind: str, repository: Path, assets: Dict[str, Path]) -> None:
    case = KINDS[kind]
    if case.model == "kind_own_env":
        # the harness runs models in the test's own Python, which lacks the model's
        # environment: it must say so, naming the module and where it is declared
        with pytest.raises(ModelLoadError) as failed:
            ModelHarness(repository / case.model)
        spec = repository / case.model / "requirements.txt"
        assert "'more_itertools'" in str(failed.value), failed.value
        assert f"run 'pip install -r {spec}' there" in str(failed.value), failed.value
        return
    inputs = {
        name: np.array([[assets["png"].read_bytes()]], object) if kind == "image" else value
        for name, value in case.harness_inputs.items()
    }
    with RepositoryHarness(repository) as repo:
        target = repo.harness(case.model)
        if case.decoupled:
            answers = repo.infer_stream(case.model, inputs)
            got = {k: np.asarray(v).tolist() for k, v in answers[-1].items()}
        elif case.sequence:
            assert isinstance(target, ModelHarness)
            got = {
                k: np.asarray(v).tolist()
                for k, v in target.infer(inputs, correlation_id=11, flags=3).items()
            }
        else:
            got = {k: np.asarray(v).tolist() for k, v in repo.infer(case.model, inputs).items()}
    for name, want in case.harness_answer.items():
        assert got[name] == want, (kind, name, got)


# ------------------------------------------------------------------------------ check
def test_check_passes_the_repository_of_every_kind(
    repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(capsys, "check", str(repository))
    assert code == 0, out
    assert " 0 errors" in out, out


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_config_check(kind: str, repository: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "config", "--check", str(repository / KINDS[kind].model))
    if kind == "own-environment":
        # its model.py imports only in its environment: config says so and names the command
        # that imports it there (test_check_passes_the_repository_of_every_kind runs it)
        assert code != 0 and one_line_refusal(out), out
        assert f"run 'tritonpy check {repository}'" in out, out
        return
    assert code == 0, out


# ------------------------------------------------------------------------------ infer
@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_infer(
    kind: str,
    protocol: str,
    server: TritonServer,
    assets: Dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = KINDS[kind]
    url = server.grpc_url if protocol == "grpc" else server.http_url
    argv = ["infer", case.model, "--url", url]
    for item in case.cli_inputs:
        argv += ["-i", item.format(png=assets["png"])]
    code, out = run_cli(capsys, *argv)
    assert code == 0 or one_line_refusal(out), out
    if protocol == "http" and case.decoupled:
        return  # a refusal naming gRPC is allowed: HTTP has no general stream
    assert code == 0, out
    assert case.answer in out, out


# ------------------------------------------------------------------------------ probe
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_probe_every_kind(
    protocol: str, server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"grpc://{server.grpc_url}" if protocol == "grpc" else server.http_url
    code, out = run_cli(capsys, "probe", "--url", url, "--json")
    assert code == 0, out
    report = json.loads(out)
    probed = [(m["name"], m["version"]) for m in report["models"]]
    # every model once, the one served in two versions once per version (its own stubs)
    expected = [(n, None) for n in _models() if n != "kind_versions"]
    assert sorted(probed, key=str) == sorted(
        [*expected, ("kind_versions", "1"), ("kind_versions", "2")], key=str
    )
    failed = [m for m in report["models"] if not m["answered"]]
    assert not failed, failed


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_infer_asks_the_version_given(
    protocol: str, server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"grpc://{server.grpc_url}" if protocol == "grpc" else server.http_url
    argv = ["infer", "kind_versions", "--url", url, "-i", "X=[1,2]", "--model-version", "1"]
    code, out = run_cli(capsys, *argv)
    assert code == 0, out
    assert "Y (FP32, shape [1, 2]): [[1.0, 2.0]]" in out, out


# --------------------------------------------------------------------------- pack-env
def test_pack_env_again_is_a_no_op(repository: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The own-environment model's archive (built by the fixture) is up to date."""
    serving = SERVING_PYTHON
    model = repository / "kind_own_env"
    argv = ["pack-env", str(model), "--python", ENV_PYTHON, "--builder", "local"]
    code, out = run_cli(capsys, *argv, "--server-python", serving)
    assert code == 0, out
    assert "up to date" in out, out


def test_pack_env_refuses_an_ensemble(
    repository: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ensemble runs no Python: pack-env refuses it in one line."""
    copy = tmp_path / "kind_ens_plain"
    shutil.copytree(repository / "kind_ens_plain", copy)
    code, out = run_cli(capsys, "pack-env", str(copy), "--python", ENV_PYTHON)
    assert code != 0 and one_line_refusal(out), out


# ------------------------------------------------------------------------------- perf
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_perf(
    kind: str,
    server: TritonServer,
    repository: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = KINDS[kind]
    report = tmp_path / "perf.json"
    argv = ["perf", case.model, "--url", server.grpc_url, "--model-dir"]
    argv += [str(repository / case.model), "--concurrency", "2", "--duration", "0.5"]
    argv += ["--warmup", "0.2", "--engine", "builtin", "--json", str(report)]
    if case.sequence:
        argv += ["--sequence-length", "4"]
    code, out = run_cli(capsys, *argv)
    assert code == 0, out
    document = json.loads(report.read_text())
    (point,) = document["points"]
    assert point["completed"] > 0 and point["errors"] == 0, point


# ------------------------------------------------------------------------------- tune
TUNED = ["plain", "decoupled-raw", "sequence-oldest", "bls-caller", "own-environment"]


@pytest.mark.parametrize("kind", TUNED)
def test_tune(
    kind: str, repository: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tune serves the model's repository in the embedded server and measures a short sweep
    in the model's own mode (streams, sequences, its BLS callee beside it)."""
    case = KINDS[kind]
    copy = tmp_path / "repo"
    shutil.copytree(repository, copy, symlinks=True)
    report = tmp_path / "tune.json"
    argv = ["tune", str(copy / case.model), "--concurrency", "2", "--duration", "0.3"]
    argv += ["--max-minutes", "0.5", "--engine", "builtin", "--json", str(report)]
    if case.sequence:
        argv += ["--sequence-length", "4"]
    code, out = run_cli(capsys, *argv)
    assert code == 0, out
    assert report.exists(), out
    if case.extra_models:  # served beside the model it calls
        assert "(with kind_bls_callee)" in out, out


def test_tune_refuses_an_ensemble(repository: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "tune", str(repository / "kind_ens_plain"))
    assert code != 0 and one_line_refusal(out), out
    assert "is an ensemble" in out and "tritonpy tune" in out, out


# ----------------------------------------------------------------------------- export
def test_export_serves_every_kind(
    repository: Path,
    tmp_path: Path,
    triton_server_factory: Callable[..., TritonServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The repository of every kind exported for 24.10 (Python 3.10 environments for the
    tritonpy models, the own-environment model's archive kept), then served from the export
    alone by the real server: every model and version answers the probe the export's liveness
    check runs."""
    source = tmp_path / "source"
    shutil.copytree(repository, source, symlinks=True)
    out = tmp_path / "deploy"
    argv = ["export", str(source), str(out), "--triton-version", "24.10", "--builder", "local"]
    code, text = run_cli(capsys, *argv)
    assert code == 0, text
    served = tmp_path / "served"
    shutil.move(str(out / "model_repository"), served)
    shutil.rmtree(source)
    server = triton_server_factory(served, startup_timeout=300, heal=False)
    assert sorted(server.models_ready()) == sorted(_models())
    code, report = run_cli(capsys, "probe", "--url", f"grpc://{server.grpc_url}", "--json")
    assert code == 0, report
    code, answer = run_cli(capsys, "infer", "kind_own_env", "--url", server.grpc_url, "-i", "X=[1]")
    assert code == 0 and "[['3.10']]" in answer, answer


# --------------------------------------------------- last: a dead stub of one version
def test_probe_fails_the_version_whose_stub_died(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last in this module (it kills a stub of the shared server): version 1 of the
    model served in two versions dies; the probe fails that version alone, by name."""
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == server.pid and any(b"/kind_versions/1/model.py" in a for a in argv):
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
    assert killed == 1
    code, out = run_cli(capsys, "probe", "--url", f"grpc://{server.grpc_url}", "--json")
    assert code == 1, out
    failed = [(m["name"], m["version"]) for m in json.loads(out)["models"] if not m["answered"]]
    assert failed == [("kind_versions", "1")], out
    code, text = run_cli(capsys, "probe", "--url", f"grpc://{server.grpc_url}")
    assert "FAIL  kind_versions (version 1)" in text, text
