"""A fleet: the exported repository of every kind of model, served from a real S3-compatible
store (SeaweedFS, the s3 fixtures) by three tritonserver replicas, updated across them under
load, and one replica killed under load, with every request answered.

Served as release 24.10's container serves it: the export for 24.10 packs Python 3.10
environments for the tritonpy models and keeps the own-environment model's archive, packed
here for Python 3.12, with the wheel's r24.10 stub for 3.12 beside its config.pbtxt; every
replica runs the stub of a Python 3.10 virtualenv holding ``numpy<2`` (the raw pb_utils models
import numpy from the server's Python, as in the container). The stub reaches the replicas
through the bucket, which keeps no file modes.

The figures (time to ready from the bucket, rollout duration, requests answered, failed and
retried per phase, throughput) are printed into the test log; the tests assert the facts, not
the timings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

import numpy as np
import pytest

from tests.integration.fleet_load import Load, LoadReport, Request
from tests.integration.test_every_kind import KINDS, Kind, _models, _png
from tritonpy._tooling.model_dirs import STUB_NAME
from tritonpy._tooling.processes import group_members
from tritonpy._tooling.releases import TritonRelease
from tritonpy.client import OutputTensor
from tritonpy.envs import pack_env
from tritonpy.envs._interpreters import find_interpreter
from tritonpy.export import ExportResult, export_repository
from tritonpy.fleet import FleetClient, FleetStats, RolloutReport, roll_out
from tritonpy.server import TritonServer, find_wheel_installation
from tritonpy.server._ports import pick_free_ports
from tritonpy.server._procs import remove_shm_regions, shm_regions
from tritonpy.storage import publish

pytestmark = pytest.mark.integration

RELEASE = TritonRelease.parse("24.10")
OTHER_PYTHON = "3.12"  # the own-environment model's: not the container's 3.10
FLEET_MODELS = Path(__file__).parent / "fleet_models"
VERSIONED = "fleet_version"  # a batched tritonpy model whose answer names its version
OWN_ENV = "kind_own_env"
PREFIX = "fleet/models"
REPLICAS = 3
STARTUP_S = 420.0  # three replicas unpacking every environment at once, on 2 cores
THREADS = 4
PER_THREAD = 20_000  # bounds: the count per thread, and the time cap of each load
LOAD_CAP_S = 240.0


# ------------------------------------------------------------------------- the requests
def _check(kind: str, got: Mapping[str, Any], want: Mapping[str, Any]) -> None:
    for name, value in want.items():
        answer = np.asarray(got[name]).tolist()
        if answer != value:
            raise AssertionError(f"{kind}: {name} is {answer}, expected {value}")


def _arrays(outputs: Sequence[OutputTensor]) -> Dict[str, Any]:
    return {tensor.name: tensor.array for tensor in outputs}


def _kind_request(kind: str, case: Kind, png: bytes) -> Request:
    """A request of ``test_every_kind``'s kind ``kind``, as its harness test sends it, with
    the answer it checks; a sequence sends three steps (a running sum: the last is 3x)."""
    inputs = {
        name: np.array([[png]], object) if kind == "image" else value
        for name, value in case.harness_inputs.items()
    }
    want = case.harness_answer

    def send(fleet: FleetClient) -> Optional[int]:
        if case.decoupled:
            result = fleet.stream(case.model, inputs)
            assert result.final and result.responses, (kind, result)
            _check(kind, result.responses[-1], want)
        elif case.sequence:
            steps = fleet.infer_sequence(case.model, [inputs] * 3)
            last = steps[-1]
            assert isinstance(last, list)
            tripled = {k: (np.asarray(v) * 3).tolist() for k, v in want.items()}
            _check(kind, _arrays(last), tripled)
        else:
            answer = fleet.answer(case.model, inputs)
            _check(kind, _arrays(answer.outputs), want)
        return None

    return Request(f"{kind} ({case.model})", send)


def _own_env(fleet: FleetClient) -> Optional[int]:
    answer = fleet.answer(OWN_ENV, {"X": np.array([[1, 2, 3]], np.float32)})
    want = {"WINDOWS": [[2]], "PYTHON": [[OTHER_PYTHON.encode()]]}
    _check(OWN_ENV, _arrays(answer.outputs), want)
    return None


def _versioned(fleet: FleetClient) -> Optional[int]:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    answer = fleet.answer(VERSIONED, {"X": x})
    _check(VERSIONED, _arrays(answer.outputs), {"Y": (x * 2).tolist()})
    versions = set(answer["VERSION"].ravel().tolist())
    assert len(versions) == 1, versions
    return int(versions.pop())


def requests() -> List[Request]:
    """Every kind of ``test_every_kind`` (the own-environment model answering Python 3.12
    here), and the versioned tritonpy model."""
    png = _png()
    found = [Request(f"batched tritonpy ({VERSIONED})", _versioned)]
    for kind, case in KINDS.items():
        if case.model == OWN_ENV:
            found.append(Request(f"{kind} ({OWN_ENV}, Python {OTHER_PYTHON})", _own_env))
        else:
            found.append(_kind_request(kind, case, png))
    return found


# ------------------------------------------------------------------------------ fixtures
@dataclass
class Published:
    """The export in the bucket: the ``bucket`` fixture object, the ``url`` served, the
    export's result (its local ``repository``) and the export's seconds (publish included)."""

    bucket: Any
    url: str
    export: ExportResult
    seconds: float


@dataclass
class Fleet:
    """The replicas, their gRPC URLs and each one's seconds from start() to ready."""

    servers: List[TritonServer]
    urls: List[str]
    ready_s: List[float]


def show(capsys: pytest.CaptureFixture[str], *lines: str) -> None:
    """Print ``lines`` into the test log, past pytest's capture."""
    with capsys.disabled():
        print()
        for line in lines:
            print(f"[fleet] {line}")


@pytest.fixture(scope="module")
def serving_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A virtualenv of the release container's Python (3.10) with its numpy pin (``numpy<2``):
    the interpreter whose stub serves the models, as in the container."""
    base = find_interpreter(RELEASE.python)
    venv = tmp_path_factory.mktemp("serving") / f"py{RELEASE.python}"
    subprocess.run([str(base.executable), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pin = RELEASE.facts.numpy_pin
    subprocess.run([str(python), "-m", "pip", "install", "-q", pin], check=True)
    return str(python)


@pytest.fixture(scope="module")
def published(
    tmp_path_factory: pytest.TempPathFactory,
    s3_bucket_factory: Callable[[Optional[str]], Any],
    repository_builder: Callable[..., Path],
) -> Iterator[Published]:
    """The repository of every kind (and the versioned model), the own-environment model
    packed for Python 3.12, exported for 24.10 ``--to`` a fresh bucket."""
    bucket = s3_bucket_factory("fleet")
    work = tmp_path_factory.mktemp("fleet")
    repo = work / "repo"
    for name, source in _models().items():
        repository_builder(repo, name, source=source)
    repository_builder(repo, VERSIONED, source=FLEET_MODELS)
    pack_env(
        repo / OWN_ENV,
        python=OTHER_PYTHON,
        builder="local",
        triton_version=RELEASE.name,
        compress_level=1,
    )
    url = bucket.url(PREFIX)
    began = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:  # the export publishes with the env's keys
        for key, value in bucket.env.items():
            patch.setenv(key, value)
        result = export_repository(
            repo, work / "deploy", triton_version=RELEASE.name, builder="local", to=url
        )
    yield Published(bucket, url, result, time.monotonic() - began)


@pytest.fixture(scope="module")
def fleet(
    published: Published, serving_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    """Three replicas on the bucket's URL, started at once: explicit model control (the
    rollout loads through the repository API), no healing (a killed replica stays dead)."""
    logs = tmp_path_factory.mktemp("replica_logs")
    ports = pick_free_ports(3 * REPLICAS)  # all at once: the replicas' ports differ
    servers = [
        TritonServer(
            published.url,
            python=serving_python,
            env=published.bucket.env,
            reloadable=True,
            heal=False,
            startup_timeout=STARTUP_S,
            http_port=ports[3 * i],
            grpc_port=ports[3 * i + 1],
            metrics_port=ports[3 * i + 2],
            log_file=logs / f"replica{i}.log",
        )
        for i in range(REPLICAS)
    ]

    def start(server: TritonServer) -> float:
        began = time.monotonic()
        server.start()
        return time.monotonic() - began

    try:
        with ThreadPoolExecutor(REPLICAS) as pool:
            started = [pool.submit(start, server) for server in servers]
        failed = [f.exception() for f in started if f.exception() is not None]
        if failed:
            progress = "\n".join(_load_progress(server) for server in servers)
            raise AssertionError(f"a replica did not start: {failed[0]}\n{progress}")
        yield Fleet(servers, [s.grpc_url for s in servers], [f.result() for f in started])
    finally:
        for server in servers:
            server.stop()


def _load_progress(server: TritonServer, lines: int = 30) -> str:
    """The model loads a replica's log shows (which models it loaded, which it was still
    loading, its errors): what says why a start failed, which the shutdown's log tail hides."""
    log = server.log_path
    text = log.read_text(errors="replace").splitlines() if log and log.exists() else []
    marks = ("loading:", "successfully loaded", "failed to load", "Using Python execution env")
    shown = [ln for ln in text if ln.startswith("E") or any(m in ln for m in marks)]
    return f"replica {server.grpc_url} ({log}):\n  " + "\n  ".join(shown[-lines:])


def _replica_answers(url: str, send: Callable[[FleetClient], Optional[int]]) -> Optional[int]:
    """``send`` to the replica ``url`` alone."""
    with FleetClient([url], retries=0) as one:
        return send(one)


# ---------------------------------------------------------------------------------- tests
def test_the_bucket_holds_the_export_stub_and_archives(
    published: Published, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file of the export is an object under the URL (the ensemble's empty version
    folder a folder marker), among them the own-environment model's Python 3.12 archive and
    the wheel's r24.10 stub for 3.12, and a 3.10 archive for every other tritonpy model."""
    local = published.export.repository
    keys = set(published.bucket.keys(PREFIX))
    files = [p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()]
    missing = [f for f in files if f"{PREFIX}/{f}" not in keys]
    assert files and not missing, missing
    assert f"{PREFIX}/kind_ens_plain/1/" in keys, sorted(keys)

    stub = f"{PREFIX}/{OWN_ENV}/{STUB_NAME}"
    assert stub in keys, sorted(keys)
    head = published.bucket.client.head_object(Bucket=published.bucket.name, Key=stub)
    wheel_stub = find_wheel_installation().stub(OTHER_PYTHON)
    assert head["ContentLength"] == wheel_stub.stat().st_size
    assert f"{PREFIX}/{OWN_ENV}/{OWN_ENV}_py{OTHER_PYTHON}.tar.gz" in keys, sorted(keys)

    tritonpy_models = [m.name for m in published.export.models if m.kind == "tritonpy"]
    assert VERSIONED in tritonpy_models and OWN_ENV in tritonpy_models, tritonpy_models
    for model in tritonpy_models:
        archives = [k for k in keys if k.startswith(f"{PREFIX}/{model}/") and ".tar.gz" in k]
        want = OTHER_PYTHON if model == OWN_ENV else RELEASE.python
        assert archives == [f"{PREFIX}/{model}/{model}_py{want}.tar.gz"], (model, archives)
        assert model == OWN_ENV or f"{PREFIX}/{model}/{STUB_NAME}" not in keys, model
    show(
        capsys,
        f"exported for {RELEASE.name} and published in {published.seconds:.1f} s: "
        f"{published.export.published.summary}",
    )


def test_three_replicas_serve_every_kind_from_the_bucket(
    published: Published, fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each replica serves every model ready from the bucket; the own-environment model
    answers from Python 3.12 on each, run by the stub that came from the bucket (Triton's
    local copy of the model folder), not the backend directory's 3.10 stub."""
    expected = sorted([*_models(), VERSIONED])
    programs = []
    for server, url in zip(fleet.servers, fleet.urls):
        assert server.models_ready() == expected, (url, server.log_tail())
        # the bucket holds a stub: one load at a time, else a stub another load thread forked
        # may hold it open for writing and its exec fails ("Text file busy"; the start hung)
        assert "--model-load-thread-count=1" in server.command, server.command
        assert "Text file busy" not in (server.log_tail(400) or ""), url
        _replica_answers(url, _own_env)
        assert _replica_answers(url, _versioned) == 1
        stubs = [p.argv for p in group_members(server.pid or -1) if f"{OWN_ENV}_0" in p.cmdline]
        assert len(stubs) == 1, [p.cmdline for p in group_members(server.pid or -1)]
        program = Path(stubs[0][0])
        assert program.name == STUB_NAME and "backends" not in program.parts, stubs[0]
        # Triton's local copy of the model folder, made from the bucket at the load
        config = (program.parent / "config.pbtxt").read_text()
        assert f'name: "{OWN_ENV}"' in config, config
        assert not str(program.parent).startswith(str(server.model_repository)), program
        programs.append(str(program))
    show(
        capsys,
        f"{REPLICAS} replicas ready from {published.url} in "
        + ", ".join(f"{s:.1f} s" for s in fleet.ready_s)
        + f" (started at once; {len(expected)} models each)",
        f"{OWN_ENV} answers from Python {OTHER_PYTHON}, its stub run from the bucket's copy: "
        + ", ".join(programs),
    )


def _phase_lines(name: str, report: LoadReport, stats: FleetStats) -> List[str]:
    lines = [
        f"{name}: {report.line()}; retried {stats.retried} (FleetClient: answered "
        f"{stats.answered}, failed {stats.failed})",
        "  answered per replica: "
        + ", ".join(f"{url} {s.answered}" for url, s in stats.replicas.items()),
        "  answered per kind: " + ", ".join(f"{k} {n}" for k, n in report.by_kind().items()),
    ]
    faults = {url: dict(s.reasons) for url, s in stats.replicas.items() if s.faults}
    if faults:
        lines.append(f"  replica faults retried elsewhere: {faults}")
    return lines


def _assert_all_answered(report: LoadReport, stats: FleetStats, kinds: Sequence[str]) -> None:
    failed = report.failed
    assert not failed, f"{len(failed)} failed, e.g. {[(o.kind, o.error) for o in failed[:3]]}"
    assert stats.failed == 0 and stats.answered == report.answered, stats
    assert sorted(report.by_kind()) == sorted(kinds), report.by_kind()


def test_rollout_under_load_answers_every_request(
    published: Published, fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    """While a load of every kind runs over the three replicas, the next version of the
    versioned model is published to the bucket (publish new_version) and rolled out replica
    by replica through the repository API: every request is answered (retries allowed),
    answers name version 1 before the publish and version 2 once the rollout is done, and
    every replica serves version 2 alone."""
    sent = requests()
    for url in fleet.urls:
        assert _replica_answers(url, _versioned) == 1
    with FleetClient(fleet.urls, retries=4, timeout=120) as client:
        load = Load(client, sent, threads=THREADS, per_thread=PER_THREAD, cap_s=LOAD_CAP_S)
        load.start()
        load.wait_every_kind()
        publish_began = time.monotonic()
        result = publish(
            published.export.repository,
            published.url,
            env=published.bucket.env,
            models=[VERSIONED],
            new_version=True,
        )
        rollout_began = time.monotonic()
        report: RolloutReport = roll_out(fleet.urls, [VERSIONED], timeout=300)
        rolled = time.monotonic()
        load.wait_every_kind(since=rolled)  # the load goes on past the rollout
        load.wait_answered(10 * len(sent), since=rolled)
        loaded = load.stop()
        stats = client.stats()

    assert result.new_versions == {VERSIONED: 2}, result.summary
    assert report.ok and [r.url for r in report.replicas] == fleet.urls, report
    assert all(r.before == {VERSIONED: (1,)} for r in report.replicas), report.replicas
    assert all(r.after == {VERSIONED: (2,)} for r in report.replicas), report.replicas
    _assert_all_answered(loaded, stats, [r.kind for r in sent])

    # the load ran through the rollout, and the answers follow it
    during = [o for o in loaded.outcomes if o.began >= rollout_began and o.ended <= rolled]
    assert len({o.kind for o in during}) == len(sent), sorted({o.kind for o in during})
    versions = [o for o in loaded.outcomes if o.version is not None]
    assert {o.version for o in versions if o.ended < publish_began} == {1}
    assert {o.version for o in versions if o.began > rolled} == {2}
    for url in fleet.urls:
        assert _replica_answers(url, _versioned) == 2, url

    show(
        capsys,
        f"publish {VERSIONED} --new-version: {result.summary}",
        f"rollout: {report.total_line()}",
        *(f"  {r.line()}" for r in report.replicas),
        *_phase_lines("load during the rollout", loaded, stats),
        f"  {VERSIONED} answers: version 1 {sum(o.version == 1 for o in versions)}, "
        f"version 2 {sum(o.version == 2 for o in versions)}; requests in flight during the "
        f"rollout {len(during)}",
    )


def test_a_replica_killed_under_load_loses_nothing(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last (it kills a replica of the module's fleet): a load of every kind, one
    replica SIGKILLed (its whole process group: tritonserver and its stubs) in its middle;
    the other two answer every request, the dead replica's are retried on them."""
    sent = requests()
    victim, victim_url = fleet.servers[1], fleet.urls[1]
    others = [u for u in fleet.urls if u != victim_url]
    pid = victim.pid
    assert pid is not None and victim.running
    with FleetClient(fleet.urls, retries=4, timeout=120) as client:
        load = Load(client, sent, threads=THREADS, per_thread=PER_THREAD, cap_s=LOAD_CAP_S)
        load.start()
        load.wait_answered(20 * len(sent))
        regions = shm_regions(p.pid for p in group_members(pid))
        os.killpg(pid, signal.SIGKILL)
        assert victim.wait(30) is not None
        killed_at = time.monotonic()
        # the victim's count is read once the requests in flight at the kill have ended
        load.wait_in_flight_ended(killed_at)
        at_kill = client.stats()
        load.wait_every_kind(since=killed_at)
        load.wait_answered(100 * len(sent), since=killed_at)
        loaded = load.stop()
        stats = client.stats()
    # a killed server cannot unlink its stubs' shared memory: do it for it
    left = [r for r in regions if os.path.exists(r)]
    remove_shm_regions(left)

    _assert_all_answered(loaded, stats, [r.kind for r in sent])
    after_kill = [o for o in loaded.outcomes if o.began >= killed_at]
    assert len({o.kind for o in after_kill}) == len(sent), sorted({o.kind for o in after_kill})
    # requests went to the dead replica, failed there and were answered by the others
    assert stats.replicas[victim_url].faults > 0 and stats.retried > 0, stats
    assert stats.replicas[victim_url].answered == at_kill.replicas[victim_url].answered
    # the dead replica's share is spread over both others (round robin over those up)
    gains = [stats.replicas[u].answered - at_kill.replicas[u].answered for u in others]
    assert min(gains) > 0 and max(gains) <= 1.5 * min(gains), (gains, stats)
    assert group_members(pid) == [], "a process of the killed replica survived"
    for server in fleet.servers:
        assert server.running == (server is not victim)
    show(
        capsys,
        f"replica {victim_url} SIGKILLed after {at_kill.answered} answers; "
        f"{len(after_kill)} requests sent after the kill, all answered by {', '.join(others)} "
        f"({' and '.join(map(str, gains))}); "
        f"it left {len(left)} of its stubs' {len(regions)} /dev/shm regions (removed)",
        *_phase_lines("load with a replica killed", loaded, stats),
    )
