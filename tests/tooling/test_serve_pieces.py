"""The pure pieces of ``tritonpy serve``: console lines per model, option names in messages,
port choice, the environment's Python, the shadow repository, the preflight filter, log files
and the hints for Triton's own load errors."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import tarfile
import time
from pathlib import Path

import pytest

from tritonpy._tooling.options import CLI_NAMES, PYTHON_NAMES
from tritonpy.server import WheelInstallation
from tritonpy.server._console import ConsoleLog, LogEcho
from tritonpy.server._failures import busy_port_message, timeout_message
from tritonpy.server._logs import LogFollower, failure_hint, new_log_file
from tritonpy.server._options import SERVE_NAMES
from tritonpy.server._ports import choose_ports, port_is_free
from tritonpy.server._preflight import PreflightError, preflight
from tritonpy.server._shadow import (
    STUB_NAME,
    build_shadow,
    env_python,
    plan_stubs,
    plan_unpacked,
    prepare,
    remove_shadow,
    sync_shadow,
    user_path,
)

# ------------------------------------------------------------------------------ console
TRITON = 'I1130 23:11:58.329812 5689 python_be.cc:2249] "{}"'


def test_console_names_the_model_of_each_kind_of_line() -> None:
    console = ConsoleLog(["pre", "post"])
    assert console.format(
        'I1130 23:11:57.027461 5689 model_lifecycle.cc:472] "loading: pre:1"'
    ) == ["[pre] I loading: pre:1"]
    assert console.format(
        TRITON.format("TRITONBACKEND_ModelInstanceInitialize: post_0 (CPU device 0)")
    ) == ["[post] I TRITONBACKEND_ModelInstanceInitialize: post_0 (CPU device 0)"]
    error = (
        'E1130 23:11:58.803994 5689 pb_stub.cc:714] "Failed to process the request(s) for model '
        "'pre_0', message: ValueError: negative\\n\\nAt:\\n  /r/pre/1/model.py(18): execute\\n\""
    )
    assert console.format(error) == [
        "[pre] E Failed to process the request(s) for model 'pre_0', message: ValueError: negative",
        "[pre]   At:",
        "[pre]     /r/pre/1/model.py(18): execute",
    ]


def test_console_keeps_model_logs_and_drops_server_chatter() -> None:
    single = ConsoleLog(["talk"], fallback="talk")
    assert single.format('W1130 23:11:58.584085 5689 model.py:9] "a warning"') == [
        "[talk] W model.py:9 a warning"
    ]
    assert single.format("hello from print\n") == ["[talk] hello from print"]
    assert single.format(TRITON.format("CUDA memory pool disabled")) == []
    stream = "unable to create stream for digits: CUDA driver version is insufficient for CUDA"
    assert single.format(TRITON.format(stream)) == []
    assert single.format("Signal (2) received.") == []
    assert single.format("I1130 23:11:58.586335 5689 server.cc:604] ") == []
    assert single.format("+------+") == [] and single.format("| Model | Version |") == []
    # raw output of a repository with several models names no model: shown as the stub's
    several = ConsoleLog(["a", "b"])
    assert several.format("Traceback (most recent call last):") == []  # collected...
    assert several.format("ValueError: x") == [  # ...until its exception line
        "[stub] Traceback (most recent call last):",
        "[stub] ValueError: x",
    ]
    assert several.format('E1130 23:11:48.838348 5357 server.cc:241] "disk full"') == [
        "[server] E disk full"
    ]


def test_console_shows_the_users_paths(tmp_path: Path) -> None:
    shadow, repo = tmp_path / "shadow", tmp_path / "repo"
    console = ConsoleLog(["m"], fallback="m", rewrite=lambda t: user_path(t, shadow, repo))
    assert console.format(f'  File "{shadow}/m/1/model.py", line 3') == [
        f'[m]   File "{repo}/m/1/model.py", line 3'
    ]


def test_log_echo_follows_the_file_until_stopped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old line\n")
    seen: list[str] = []
    echo = LogEcho(log, log.stat().st_size, ConsoleLog(["m"], fallback="m"), seen.append)
    echo.start()
    with open(log, "a") as stream:
        stream.write('I1130 23:11:58.583770 5689 model.py:8] "one"\npartial')
    echo.stop()
    assert seen == ["[m] I model.py:8 one", "[m] partial"]


# ----------------------------------------------------------------------- option names
def test_messages_name_cli_flags_or_keyword_arguments() -> None:
    assert CLI_NAMES.option("http_port", "PORT") == "--http-port PORT"
    # serve's flag for startup_timeout comes from ServerOptions' declaration
    assert SERVE_NAMES.option("startup_timeout", "SECONDS") == "--timeout SECONDS"
    assert CLI_NAMES.option("startup_timeout") == "--startup-timeout"
    assert PYTHON_NAMES.option("http_port", "8000") == "http_port=8000"
    cli = busy_port_message("HTTP", "http_port", 8000, "127.0.0.1", CLI_NAMES)
    assert "--http-port PORT" in cli and "http_port=" not in cli
    assert "http_port=PORT" in busy_port_message("HTTP", "http_port", 1, "h", PYTHON_NAMES)
    assert "--timeout SECONDS" in timeout_message(Path("r"), 3, ["m"], "", SERVE_NAMES)


# ------------------------------------------------------------------------------ ports
def test_preferred_ports_when_free_else_free_ones() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert not port_is_free(taken)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        chosen = choose_ports([None, 9999, None], preferred=[taken, 1, free])
        assert chosen[1] == 9999  # requested: kept as given
        assert chosen[0] != taken and chosen[0] not in (9999, free)
        assert chosen[2] == free
        assert len(set(chosen)) == 3


# ---------------------------------------------------------------- environments, shadow
def write_env_model(model: Path, python: str, *, archive_name: str = "") -> Path:
    """A python model whose EXECUTION_ENV_PATH archive holds Python ``python``."""
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(
        "import tritonpy as tp\n\n\nclass M(tp.Model):\n"
        '    inputs = {"X": tp.Tensor("FP32", [1])}\n'
        '    outputs = {"Y": tp.Tensor("FP32", [1])}\n\n'
        "    def infer(self, X):\n"
        '        return {"Y": X}\n\n\nTritonPythonModel = M\n'
    )
    name = archive_name or f"env_py{python}.tar.gz"
    (model / "config.pbtxt").write_text(
        f'name: "{model.name}"\nbackend: "python"\nparameters {{ key: "EXECUTION_ENV_PATH" '
        f'value {{ string_value: "$$TRITON_MODEL_DIRECTORY/{name}" }} }}\n'
    )
    with tarfile.open(model / name, "w:gz") as archive:
        for member, data in (("bin/activate", b"# activate\n"), (f"lib/libpython{python}.so", b"")):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return model


def fake_wheel(tmp_path: Path, *versions: str) -> WheelInstallation:
    root = tmp_path / "wheel" / "tritonserver"
    for version in versions:
        stub = root / "python_backend_stubs" / version / STUB_NAME
        stub.parent.mkdir(parents=True)
        stub.write_bytes(b"\x7fELF stub " + version.encode())
    return WheelInstallation(root, tmp_path / "wheel" / "libs", "0.7.0")


def test_env_python_from_record_name_or_contents(tmp_path: Path) -> None:
    named = write_env_model(tmp_path / "named", "3.10")
    assert env_python(named) == "3.10"
    inside = write_env_model(tmp_path / "inside", "3.12", archive_name="deps.tar.gz")
    assert env_python(inside) == "3.12"
    recorded = write_env_model(tmp_path / "recorded", "3.9", archive_name="deps.tar.gz")
    record = {"archives": {"deps.tar.gz": {"python": "3.13"}}}
    (recorded / ".tritonpy-env.json").write_text(json.dumps(record))
    assert env_python(recorded) == "3.13"  # what pack-env recorded wins over a scan
    plain = tmp_path / "plain"
    (plain / "1").mkdir(parents=True)
    (plain / "config.pbtxt").write_text('name: "plain"\nbackend: "python"\n')
    assert env_python(plain) is None


def test_plan_and_shadow_leave_the_users_directories_alone(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_env_model(repo / "old", "3.10")
    write_env_model(repo / "same", "3.11")
    write_env_model(repo / "own", "3.10")
    (repo / "own" / STUB_NAME).write_bytes(b"the user's own stub")
    write_env_model(repo / "unknown", "3.7")  # no stub for it in the wheel
    wheel = fake_wheel(tmp_path, "3.10", "3.11")
    before = sorted((str(p), p.stat().st_mtime_ns) for p in repo.rglob("*"))

    plans = plan_stubs(repo, "3.11", wheel)
    assert list(plans) == ["old"]
    assert plans["old"].python == "3.10" and plans["old"].stub == wheel.stub("3.10")

    shadow = build_shadow(repo, plans)
    try:
        assert (shadow / "old").is_dir() and not (shadow / "old").is_symlink()
        assert (shadow / "old" / STUB_NAME).read_bytes() == b"\x7fELF stub 3.10"
        assert (shadow / "old" / "1").resolve() == (repo / "old" / "1").resolve()
        assert (shadow / "old" / "env_py3.10.tar.gz").is_file()
        assert (shadow / "same").resolve() == (repo / "same").resolve()
        assert (shadow / "own" / STUB_NAME).read_bytes() == b"the user's own stub"
        assert user_path(f"{shadow}/old/1/model.py", shadow, repo) == f"{repo}/old/1/model.py"
    finally:
        remove_shadow(shadow)
    assert not shadow.exists()
    assert sorted((str(p), p.stat().st_mtime_ns) for p in repo.rglob("*")) == before


def test_shadow_reaches_environments_beside_the_repository(tmp_path: Path) -> None:
    """export's shared layout: EXECUTION_ENV_PATH is $$TRITON_MODEL_DIRECTORY/../../envs/...;
    in the shadow that path must reach the same archive."""
    repo = tmp_path / "deploy" / "model_repository"
    write_env_model(repo / "old", "3.10")
    envs = tmp_path / "deploy" / "envs"
    envs.mkdir()
    (repo / "old" / "env_py3.10.tar.gz").rename(envs / "env_py3.10.tar.gz")
    config = (repo / "old" / "config.pbtxt").read_text()
    (repo / "old" / "config.pbtxt").write_text(
        config.replace("$$TRITON_MODEL_DIRECTORY/", "$$TRITON_MODEL_DIRECTORY/../../envs/")
    )
    (tmp_path / "deploy" / "unrelated").mkdir()
    wheel = fake_wheel(tmp_path, "3.10", "3.11")
    plans = plan_stubs(repo, "3.11", wheel)
    assert list(plans) == ["old"]
    shadow = build_shadow(repo, plans)
    try:
        reached = Path(
            os.path.normpath(shadow / "old" / ".." / ".." / "envs" / "env_py3.10.tar.gz")
        )
        assert reached.resolve() == (envs / "env_py3.10.tar.gz").resolve()
        assert not (shadow.parent / "unrelated").exists()  # only what a path reaches
    finally:
        remove_shadow(shadow)
    assert not shadow.parent.exists() and (envs / "env_py3.10.tar.gz").is_file()


def test_archives_in_their_model_directory_are_served_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pb_env.cc extracts an archive at every server start and uses a directory in place: the
    shadow names an archive in its model's directory after tritonpy's unpacked copy of it
    (one per archive contents); an archive beside the repository or named absolutely is left
    to tritonserver."""
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "deploy" / "model_repository"
    write_env_model(repo / "inside", "3.11")
    write_env_model(repo / "twin", "3.11", archive_name="twin.tar.gz")
    os.unlink(repo / "twin" / "twin.tar.gz")  # per-model copies of one archive: hard links
    os.link(repo / "inside" / "env_py3.11.tar.gz", repo / "twin" / "twin.tar.gz")
    write_env_model(repo / "shared", "3.11")
    (tmp_path / "deploy" / "envs").mkdir()
    (repo / "shared" / "env_py3.11.tar.gz").rename(tmp_path / "deploy" / "envs" / "e.tar.gz")
    config = (repo / "shared" / "config.pbtxt").read_text()
    (repo / "shared" / "config.pbtxt").write_text(
        config.replace("env_py3.11.tar.gz", "../../envs/e.tar.gz")
    )
    write_env_model(repo / "absolute", "3.11")
    config = (repo / "absolute" / "config.pbtxt").read_text()
    (repo / "absolute" / "config.pbtxt").write_text(
        config.replace("$$TRITON_MODEL_DIRECTORY", str(repo / "absolute"))
    )
    (repo / "plain" / "1").mkdir(parents=True)
    (repo / "plain" / "config.pbtxt").write_text('name: "plain"\nbackend: "python"\n')
    before = sorted((str(p), p.stat().st_mtime_ns) for p in repo.rglob("*"))

    planned = plan_unpacked(repo)
    assert sorted(planned) == ["inside", "twin"]
    folder = planned["inside"].folder
    assert planned["twin"].folder == folder  # one copy for one archive's contents
    assert folder.parent == tmp_path / "cache" / "envs" / "unpacked"
    assert (folder / "bin" / "activate").read_bytes() == b"# activate\n"
    assert planned["twin"].entry == "twin.tar.gz"

    shadow, served = prepare(repo, {}, unpacked=True)
    assert shadow is not None and served == planned
    try:
        link = shadow / "inside" / "env_py3.11.tar.gz"
        assert link.is_symlink() and link.is_dir() and link.resolve() == folder.resolve()
        assert (shadow / "twin" / "twin.tar.gz").resolve() == folder.resolve()
        config_link = (shadow / "inside" / "config.pbtxt").resolve()
        assert config_link == (repo / "inside" / "config.pbtxt").resolve()
        for name in ("shared", "absolute", "plain"):  # whole-directory links, as before
            assert (shadow / name).is_symlink(), name
        assert sorted((str(p), p.stat().st_mtime_ns) for p in repo.rglob("*")) == before

        # a copy of the same bytes keeps the copy; new contents (pack-env again) get theirs;
        # the archive gone, its link goes too
        copied = tmp_path / "copied.tar.gz"
        shutil.copyfile(repo / "inside" / "env_py3.11.tar.gz", copied)
        os.replace(copied, repo / "inside" / "env_py3.11.tar.gz")
        sync_shadow(shadow, repo, {})
        assert link.resolve() == folder.resolve()
        (repo / "twin" / "twin.tar.gz").unlink()
        write_env_model(tmp_path / "other" / "twin", "3.10", archive_name="twin.tar.gz")
        os.replace(tmp_path / "other" / "twin" / "twin.tar.gz", repo / "twin" / "twin.tar.gz")
        (repo / "twin" / "labels.txt").write_text("a\n")
        sync_shadow(shadow, repo, {})
        renewed = (shadow / "twin" / "twin.tar.gz").resolve()
        assert renewed != folder.resolve() and (renewed / "lib" / "libpython3.10.so").exists()
        assert (shadow / "twin" / "labels.txt").resolve() == (repo / "twin" / "labels.txt")
        (repo / "twin" / "twin.tar.gz").unlink()
        sync_shadow(shadow, repo, {})
        assert not os.path.lexists(shadow / "twin" / "twin.tar.gz")
    finally:
        remove_shadow(shadow)
    assert prepare(repo, {}, unpacked=False) == (None, {})
    assert folder.is_dir()  # the cache's copy outlives the server


# -------------------------------------------------------------------------- preflight
def test_preflight_reports_a_mismatch_unless_serve_provides_the_stub(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_env_model(repo / "old", "3.10")
    with pytest.raises(PreflightError) as info:
        preflight(repo, server_python="3.11", names=CLI_NAMES)
    message = str(info.value)
    assert "TP507" in message and "tritonserver was not started" in message
    assert "--no-check" in message
    with pytest.raises(PreflightError, match=r"check=False"):
        preflight(repo, server_python="3.11")  # the Python caller's name for the option
    report = preflight(repo, server_python="3.11", provided_stubs=["old"])
    assert "TP507" not in report.codes


def test_preflight_catches_a_misnamed_model_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "1" / "Model.py").write_text("class TritonPythonModel:\n    pass\n")
    (repo / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    with pytest.raises(PreflightError) as info:
        preflight(repo, server_python="3.11")
    assert "TP105" in str(info.value) and "m/1/model.py" in str(info.value)


# ------------------------------------------------------------------ logs and failures
def test_new_log_files_are_kept_but_pruned(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for index in range(5):
        old = logs / f"serve-old-{index}.log"
        old.write_text("x")
        os.utime(old, (time.time() - 100 + index, time.time() - 100 + index))
    path = new_log_file(tmp_path / "my repo", logs, keep=3)
    assert path.parent == logs and path.name.startswith("serve-my_repo-")
    assert path.name.endswith(f"-{os.getpid()}.log") and not path.exists()
    assert sorted(p.name for p in logs.iterdir()) == ["serve-old-3.log", "serve-old-4.log"]


def test_a_missing_model_file_fails_the_model_at_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "I1130 23:11:48.889386 5373 pb_stub.cc:2105]  Failed to preinitialize Python stub: "
        "Python model file not found in '/r/wrongname/1/model.py'\n"
    )
    follower = LogFollower(log)
    follower.poll()
    assert list(follower.failures) == ["wrongname"]
    assert "version 1 of model 'wrongname' has no model.py" in follower.failures["wrongname"]
    assert "default_model_filename" in follower.failures["wrongname"]


def test_missing_triton_python_model_gets_the_fix() -> None:
    text = "Internal: AttributeError: module '1.model' has no attribute 'TritonPythonModel'"
    assert "Add `TritonPythonModel = YourClass`" in failure_hint("noclass", text)
    assert "'noclass'" in failure_hint("noclass", text)
    assert failure_hint("m", "SyntaxError: invalid syntax") == ""


def test_a_bucket_holding_a_stub_is_served_one_load_at_a_time() -> None:
    from tritonpy.server._remote import RemoteRepository, load_args
    from tritonpy.storage import parse_repository_url

    remote = RemoteRepository(parse_repository_url("s3://127.0.0.1:9/b/p"), {})
    assert load_args(None, []) == [] and load_args(remote, []) == []
    remote.stub_models = ["own_env"]
    assert load_args(remote, []) == ["--model-load-thread-count=1"]
    assert load_args(remote, ["--model-load-thread-count=2"]) == []  # the user's own wins
