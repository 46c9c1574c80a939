"""The local builder for real: pyenv's CPython 3.10 + numpy<2 + tritonpy, packed, verified,
unpacked elsewhere and run; skip-if-unchanged; EXECUTION_ENV_PATH through protobuf; the CLI."""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import tritonpy
from tritonpy._tooling.archives import safe_extract
from tritonpy._tooling.elf import read_dynamic
from tritonpy._tooling.env_archives import RECORD_NAME, read_record
from tritonpy.config import load_config
from tritonpy.envs import PackResult, Reporter, pack_env
from tritonpy.envs import _cli as envs_cli
from tritonpy.envs._interpreters import find_interpreter

ROOT = Path(__file__).resolve().parents[2]


class Recorder(Reporter):
    def __init__(self) -> None:
        self.events: List[Tuple[str, str]] = []

    def start(self, step: str) -> None:
        self.events.append(("start", step))

    def done(self, step: str, detail: str = "") -> None:
        self.events.append(("done", step))

    def note(self, message: str) -> None:
        self.events.append(("note", message))


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, PackResult, Recorder]:
    model = tmp_path_factory.mktemp("local") / "version_model"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "version_model"\nbackend: "python"\n')
    (model / "environment.yml").write_text(
        "name: version_model\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n"
        "      - numpy<2\n      - tritonpy\n"
    )
    reporter = Recorder()
    result = pack_env(model, builder="local", stub="never", compress_level=1, reporter=reporter)
    return model, result, reporter


def test_archive_is_placed_and_verified(packed: Tuple[Path, PackResult, Recorder]) -> None:
    model, result, reporter = packed
    assert result.archive == model / "version_model_py3.10.tar.gz"
    assert result.archive.is_file() and result.size == result.archive.stat().st_size
    assert (result.python, result.builder, result.skipped) == ("3.10", "local", False)
    assert result.verify is not None
    assert set(result.verify.modules) == {"tritonpy", "numpy"}
    assert result.verify.libpython.endswith("/env/lib/libpython3.10.so.1.0")
    steps = [step for kind, step in reporter.events if kind == "done"]
    assert "installing numpy with pip" in steps
    assert any(
        s.startswith("installing tritonpy-") and "(the running tritonpy)" in s for s in steps
    )
    assert result.verify.tritonpy_version == tritonpy.__version__
    assert [p.name for p in model.iterdir() if ".partial" in p.name] == []
    assert read_record(model)["version_model_py3.10.tar.gz"]["python"] == "3.10"


def test_config_points_at_the_archive(packed: Tuple[Path, PackResult, Recorder]) -> None:
    model, result, _ = packed
    config = load_config(model / "config.pbtxt")
    value = config.parameters["EXECUTION_ENV_PATH"].string_value
    assert value == "$$TRITON_MODEL_DIRECTORY/version_model_py3.10.tar.gz" == result.parameter
    assert config.name == "version_model" and config.backend == "python"


def test_relocated_copy_runs_its_own_python(
    packed: Tuple[Path, PackResult, Recorder], tmp_path: Path
) -> None:
    _, result, _ = packed
    env = safe_extract(result.archive, tmp_path / "somewhere" / "else")
    clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    script = "import sys, numpy, tritonpy; print(sys.prefix, numpy.__version__, sys.version)"
    via_activate = subprocess.run(
        ["bash", "-c", f'source "{env}/bin/activate" && python3 -c "{script}"'],
        capture_output=True,
        text=True,
        env=clean,
        check=True,
    ).stdout.split()
    assert via_activate[0] == str(env)
    assert via_activate[1].startswith("1.")  # numpy<2 for release 24.10
    assert via_activate[2].startswith("3.10.")
    # the interpreter finds its libpython through RUNPATH $ORIGIN/../lib even without activate
    assert read_dynamic(env / "bin" / "python3.10").runpath == "$ORIGIN/../lib"
    direct = subprocess.run(
        [str(env / "bin" / "python3"), "-c", "import sys, numpy; print(sys.prefix)"],
        capture_output=True,
        text=True,
        env=clean,
        check=True,
    )
    assert direct.stdout.strip() == str(env)
    pip = subprocess.run(
        [str(env / "bin" / "pip"), "--version"], capture_output=True, text=True, env=clean
    )
    assert pip.returncode == 0 and str(env) in pip.stdout  # relocatable script shebangs
    assert not (env / "lib" / "python3.10" / "test").exists()


def test_unchanged_spec_skips_the_rebuild(packed: Tuple[Path, PackResult, Recorder]) -> None:
    model, result, _ = packed
    mtime = result.archive.stat().st_mtime_ns
    began = time.monotonic()
    again = pack_env(model, builder="local", stub="never")
    assert again.skipped and again.archive == result.archive
    assert time.monotonic() - began < 10
    assert result.archive.stat().st_mtime_ns == mtime


def test_cli_prints_size_time_location(
    packed: Tuple[Path, PackResult, Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    model, result, _ = packed
    parser = argparse.ArgumentParser(prog="tritonpy")
    envs_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["pack-env", str(model), "--builder", "local", "--stub", "never"])
    assert args.func(args) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"{result.archive} (")
    assert "MB, Python 3.10, unchanged)" in last and last.endswith(" s")


def test_cli_reports_errors_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="tritonpy")
    envs_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["pack-env", str(tmp_path)])
    assert args.func(args) == 1
    assert "no config.pbtxt" in capsys.readouterr().err


def test_python_path_must_match_the_version() -> None:
    base = find_interpreter("3.10")
    assert base.libpython.name == "libpython3.10.so.1.0"
    with pytest.raises(Exception, match=r"is Python 3.10, but Python 3.12 was requested"):
        find_interpreter("3.12", base.executable)


def test_pack_env_script_wraps_the_cli(packed: Tuple[Path, PackResult, Recorder]) -> None:
    model, result, _ = packed
    env = {**os.environ, "PYTHON": str(Path(os.sys.executable))}
    done = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "pack_env.sh"),
            str(model),
            "--builder",
            "local",
            "--stub",
            "never",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(result.archive))
    assert (model / RECORD_NAME).is_file()
