"""Reading tritonserver's log: load failures, including a stub that cannot start."""

from __future__ import annotations

from pathlib import Path

from tritonpy.server._logs import LogFollower

LOADING = 'I1129 10:43:38.612957 19652 model_lifecycle.cc:472] "loading: {name}:1"\n'
STUB_ERROR = (
    "{path}: error while loading shared libraries: libpython3.9.so.1.0: cannot open shared "
    "object file: No such file or directory\n"
)


def follow(tmp_path: Path, text: str) -> LogFollower:
    log = tmp_path / "server.log"
    log.write_text(text)
    follower = LogFollower(log)
    follower.poll()
    return follower


def test_a_models_own_stub_failing_names_that_model(tmp_path: Path) -> None:
    model = tmp_path / "repo" / "pre"
    model.mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "pre"')
    stub = model / "triton_python_backend_stub"
    text = LOADING.format(name="pre") + LOADING.format(name="post") + STUB_ERROR.format(path=stub)
    follower = follow(tmp_path, text)
    assert list(follower.failures) == ["pre"]
    assert "libpython3.9.so.1.0: cannot open shared object file" in follower.failures["pre"]
    assert "tritonpy stub MODEL_DIR --python X.Y" in follower.failures["pre"]


def test_the_backends_stub_failing_names_every_loading_model(tmp_path: Path) -> None:
    stub = tmp_path / "backends" / "python" / "triton_python_backend_stub"
    loaded = "I1129 10:43:39.1 1 model_lifecycle.cc:839] \"successfully loaded 'done'\"\n"
    text = (
        LOADING.format(name="a")
        + LOADING.format(name="b")
        + LOADING.format(name="done")
        + loaded
        + STUB_ERROR.format(path=stub)
    )
    assert sorted(follow(tmp_path, text).failures) == ["a", "b"]


def test_failed_load_lines_are_unescaped(tmp_path: Path) -> None:
    line = (
        "E1129 09:28:54.343373 3445 model_lifecycle.cc:642] \"failed to load 'm' version 1: "
        'Internal: SyntaxError: invalid syntax (model.py, line 3)\\n\\nAt:\\n  x"\n'
    )
    failures = follow(tmp_path, line).failures
    assert failures == {"m": "Internal: SyntaxError: invalid syntax (model.py, line 3)\n\nAt:\n  x"}
