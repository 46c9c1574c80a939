"""The pure pieces behind serve's short load failures, its console attribution and
``--reload``: Triton's failure text made short, tracebacks kept with their model, load-failure
lines left to the log, repository snapshots, the settle (debounce), ensembles over a model,
the shadow repository kept in step, and the watcher's console lines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

import pytest

from tritonpy.server import LoadFailure, RepositoryWatcher, ServerError, TritonServer, WatchEvent
from tritonpy.server._changes import Change, Settle, compare, ensembles_over, snapshot
from tritonpy.server._console import ConsoleLog
from tritonpy.server._loadfail import Frame, describe_load_failure, user_frames
from tritonpy.server._shadow import StubPlan, sync_shadow

# as release 24.10 words them (copied from its log and repository API)
MISSING = (
    "Internal: ModuleNotFoundError: No module named 'scipy_not_there'\n\nAt:\n"
    "  /r/broken/1/model.py(2): <module>\n"
    "  <frozen importlib._bootstrap>(241): _call_with_frames_removed\n"
    "  <frozen importlib._bootstrap_external>(940): exec_module\n"
)
SETUP = (
    "load failed for model 'm': version 1 is at UNAVAILABLE state: Internal: RuntimeError: "
    "no weights at /nowhere\n\nAt:\n  /r/m/1/model.py(4): helper\n  /r/m/1/model.py(9): setup\n"
    "  /venv/lib/python3.11/site-packages/tritonpy/_runtime/model.py(245): initialize\n;\n"
)


# ------------------------------------------------------------------------ load failures
def test_a_missing_package_names_the_serving_interpreter_and_both_fixes(tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    failure = describe_load_failure("broken", MISSING, repository=tmp_path, python="/v/python")
    assert failure.exception == "ModuleNotFoundError: No module named 'scipy_not_there'"
    assert failure.lines() == [
        "model 'broken' failed to load: ModuleNotFoundError: No module named 'scipy_not_there'",
        '  File "/r/broken/1/model.py", line 2, in <module>',
        "  fix: the serving interpreter /v/python has no module 'scipy_not_there': install it "
        "there (`/v/python -m pip install scipy-not-there`), or give the model its own "
        f"environment (add scipy-not-there to {tmp_path / 'broken' / 'requirements.txt'}, "
        f"then `tritonpy pack-env {tmp_path / 'broken'}`)",
    ]


def test_user_frames_come_outermost_first_without_tritonpy_or_importlib(tmp_path: Path) -> None:
    failure = describe_load_failure("m", SETUP, repository=tmp_path)
    assert failure.exception == "RuntimeError: no weights at /nowhere"
    assert [(f.function, f.line) for f in failure.frames] == [("setup", 9), ("helper", 4)]
    assert failure.where is not None and failure.where.function == "helper"
    assert failure.fix == ""
    assert user_frames(["  <frozen importlib._bootstrap>(1): f", "not a frame"]) == []
    # a repository inside a folder named tritonpy (this project's checkout) is still the user's
    frames = ["  /src/tritonpy/repo/m/1/model.py(3): setup", "  /src/tritonpy/_runtime/x.py(9): f"]
    kept = user_frames(frames, Path("/src/tritonpy/repo"))
    assert kept == [Frame("/src/tritonpy/repo/m/1/model.py", 3, "setup")]


def test_a_syntax_error_points_at_the_file_of_its_version(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text("class M(\n")
    text = "Internal: SyntaxError: expected ':' (model.py, line 2)"
    failure = describe_load_failure("m", text, repository=tmp_path)
    assert failure.lines() == [
        "model 'm' failed to load: SyntaxError: expected ':' (model.py, line 2)",
        f'  File "{tmp_path}/m/1/model.py", line 2, in <module>',
    ]


def test_a_headline_of_the_callers_choice() -> None:
    failure = LoadFailure("m", "NameError: x", fix="define x")
    assert failure.lines(headline="reload of m failed") == [
        "reload of m failed: NameError: x",
        "  fix: define x",
    ]


# ------------------------------------------------------------------------------ console
def feed(console: ConsoleLog, lines: List[str]) -> List[str]:
    out: List[str] = []
    for line in lines:
        out += console.format(line)
    return out + console.flush()


def test_a_printed_traceback_belongs_to_the_model_whose_files_it_shows() -> None:
    console = ConsoleLog(["router", "callee"])
    shown = feed(
        console,
        [
            "Traceback (most recent call last):",
            '  File "/r/router/1/model.py", line 14, in execute',
            "    raise RuntimeError(f\"model 'callee' answered: {msg}\")",
            "RuntimeError: model 'callee' answered: negative",
            "printed by someone",
        ],
    )
    assert shown == [
        "[router] Traceback (most recent call last):",
        '[router]   File "/r/router/1/model.py", line 14, in execute',
        "[router]     raise RuntimeError(f\"model 'callee' answered: {msg}\")",
        "[router] RuntimeError: model 'callee' answered: negative",
        "[stub] printed by someone",
    ]


def test_a_logged_error_starting_with_a_model_name_is_that_models() -> None:
    console = ConsoleLog(["router", "callee"])
    line = "E1203 10:52:58.1 5 model.py:490] \"router: TritonRequestError: 'callee' failed\""
    assert console.format(line) == [
        "[router] E model.py:490 router: TritonRequestError: 'callee' failed"
    ]


def test_the_lines_of_a_load_failure_are_left_to_the_log() -> None:
    console = ConsoleLog(["broken"], fallback="broken")
    log = [
        'I1203 10:51:03.016140 4809 model_lifecycle.cc:472] "loading: broken:1"',
        "I1203 10:51:03.138869 4818 pb_stub.cc:298]  Failed to initialize Python stub for "
        "auto-complete: ModuleNotFoundError: No module named 'scipy_not_there'",
        "At:",
        "  /r/broken/1/model.py(2): <module>",
        "E1203 10:51:03.141739 4809 model_lifecycle.cc:642] \"failed to load 'broken' version "
        "1: Internal: ModuleNotFoundError: No module named 'scipy_not_there'\\n\\nAt:\\n\"",
        'E1203 10:55:37.497194 12612 backend_model.cc:692] "ERROR: Failed to create instance: x"',
        "I1203 10:51:03.141777 4809 model_lifecycle.cc:777] \"failed to load 'broken'\"",
        "error: creating server: Internal - failed to load all models",
        'E1203 11:09:47.2 8224 server.cc:241] "Internal: failed to load all models"',
        "W1203 10:51:04.1 4818 model.py:3] \"failed to load 'weights.bin', using defaults\"",
    ]
    assert feed(console, log) == [
        "[broken] I loading: broken:1",
        "[broken] W model.py:3 failed to load 'weights.bin', using defaults",  # the model's own
    ]


def test_new_models_are_recognised_once_set() -> None:
    console = ConsoleLog(["m"])
    line = 'I1203 11:02:39.592649 27343 model_lifecycle.cc:472] "loading: n:1"'
    assert console.format(line) == []  # Triton's information about no known model
    console.set_models(["m", "n"])
    assert console.format(line) == ["[n] I loading: n:1"]


# ------------------------------------------------------------------------------ changes
def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_snapshots_see_added_edited_and_removed_models(tmp_path: Path) -> None:
    write(tmp_path / "a" / "1" / "model.py", "a")
    write(tmp_path / "b" / "config.pbtxt", "b")
    write(tmp_path / "b" / "1" / "__pycache__" / "model.pyc", "ignored")
    before = snapshot(tmp_path)
    write(tmp_path / "b" / "1" / "__pycache__" / "model.pyc", "ignored, changed")
    assert not compare(before, snapshot(tmp_path))
    write(tmp_path / "b" / "config.pbtxt", "b, longer")
    write(tmp_path / "c" / "config.pbtxt", "c")
    (tmp_path / "a" / "1" / "model.py").unlink()
    (tmp_path / "a" / "1").rmdir()
    (tmp_path / "a").rmdir()
    assert compare(before, snapshot(tmp_path)) == Change(("c",), ("b",), ("a",))


def test_a_change_is_handed_out_once_it_settled(tmp_path: Path) -> None:
    write(tmp_path / "m" / "config.pbtxt", "one")
    settle = Settle(snapshot(tmp_path), settle=0.2)
    write(tmp_path / "m" / "config.pbtxt", "two, still being written")
    assert not settle.look(snapshot(tmp_path), 10.0)  # first seen
    write(tmp_path / "m" / "config.pbtxt", "three")
    assert not settle.look(snapshot(tmp_path), 10.15)  # changed again: waits anew
    assert not settle.look(snapshot(tmp_path), 10.3)  # same for 0.15 s only
    assert settle.look(snapshot(tmp_path), 10.4) == Change(edited=("m",))
    assert not settle.look(snapshot(tmp_path), 11.0)  # handed out once


ENSEMBLE = """name: "{name}"
platform: "ensemble"
ensemble_scheduling {{ step {{ model_name: "{member}" model_version: -1 }} }}
"""


def test_ensembles_over_a_model_inner_before_outer(tmp_path: Path) -> None:
    write(tmp_path / "m" / "config.pbtxt", 'name: "m"\nbackend: "python"\n')
    write(tmp_path / "z_inner" / "config.pbtxt", ENSEMBLE.format(name="z_inner", member="m"))
    write(tmp_path / "a_outer" / "config.pbtxt", ENSEMBLE.format(name="a_outer", member="z_inner"))
    write(tmp_path / "other" / "config.pbtxt", ENSEMBLE.format(name="other", member="x"))
    assert ensembles_over(tmp_path, ["m"]) == ["z_inner", "a_outer"]
    assert ensembles_over(tmp_path, ["x"]) == ["other"]


def test_the_shadow_follows_added_and_removed_models(tmp_path: Path) -> None:
    repo, shadow = tmp_path / "repo", tmp_path / "shadow"
    write(repo / "old" / "config.pbtxt", "old")
    write(repo / "env" / "config.pbtxt", "env")
    shadow.mkdir()
    (shadow / "old").symlink_to(repo / "old")
    (shadow / "env").mkdir()
    (shadow / "env" / "config.pbtxt").symlink_to(repo / "env" / "config.pbtxt")
    stub = tmp_path / "stub"
    stub.write_text("")
    (shadow / "env" / "triton_python_backend_stub").symlink_to(stub)
    plans = {"env": StubPlan("env", "3.10", stub)}
    write(repo / "new" / "config.pbtxt", "new")
    write(repo / "env" / "1" / "model.py", "added inside a model with a stub")
    (repo / "old" / "config.pbtxt").unlink()
    (repo / "old").rmdir()
    sync_shadow(shadow, repo, plans)
    assert sorted(os.listdir(shadow)) == ["env", "new"]
    assert (shadow / "new").resolve() == repo / "new"
    assert (shadow / "env" / "1").resolve() == repo / "env" / "1"
    assert (shadow / "env" / "triton_python_backend_stub").is_symlink()
    assert (repo / "env" / "1" / "model.py").exists()  # the user's files are untouched


# --------------------------------------------------------------------------- watch lines
def test_watch_events_as_console_lines() -> None:
    assert WatchEvent("reloaded", "m", 1.62, ("1",)).lines() == ["reloaded m (v1) in 1.6 s"]
    assert WatchEvent("loaded", "n", 1.5, ("1", "2")).lines() == ["loaded n (v1/v2) in 1.5 s"]
    follower = WatchEvent("reloaded", "ens", 0.0, ("1",), after="m", by_server=True)
    assert follower.lines() == ["reloaded ens (v1) with m"]
    assert WatchEvent("reloaded", "ens", 0.1, ("1",), after="m").lines() == [
        "reloaded ens (v1) in 0.1 s, after m"
    ]
    failure = LoadFailure("m", "NameError: x", fix="define x")
    assert WatchEvent("failed", "m", versions=("1",), failure=failure).lines() == [
        "reload of m failed; v1 keeps serving: NameError: x",
        "  fix: define x",
    ]
    assert WatchEvent("failed", "n", failure=failure).lines()[0] == "load of n failed: NameError: x"
    assert WatchEvent("unloaded", "n", 0.1).lines() == ["unloaded n"]


def test_the_watcher_refuses_a_server_it_cannot_reload(tmp_path: Path) -> None:
    server = TritonServer(tmp_path)  # never started
    with pytest.raises(ServerError, match="needs a server in explicit model-control mode"):
        RepositoryWatcher(server, on_event=print)
    server.command = ["tritonserver", "--model-repository=x"]  # as heal=False starts it
    refused = r"polls its repository itself\. Start it first, with reloadable=True"
    with pytest.raises(ServerError, match=refused):
        RepositoryWatcher(server, on_event=print)
