"""The conda builder's orchestration with a stand-in ``micromamba`` on PATH (conda channels are
not reachable here). The stand-in records its arguments and creates a conda-like prefix (a
copy of pyenv's CPython 3.10 with a ``conda-meta`` record); pip, the real conda-pack Python API
and the verification then run for real on it."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path
from typing import Tuple

import pytest

from tritonpy.config import load_config
from tritonpy.envs import EnvError, pack_env
from tritonpy.envs._conda import find_conda

STAND_IN = """#!{python}
# stand-in for micromamba: records its arguments, creates a conda-like prefix
import json, os, subprocess, sys
from pathlib import Path
from tritonpy.envs._interpreters import find_interpreter
from tritonpy.envs._local import clean_environment, copy_interpreter
from tritonpy._tooling.progress import Reporter

args = sys.argv[1:]
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if os.environ.get("STAND_IN_MODE") == "broken" or args[0] != "create":
    sys.exit(0)
prefix = Path(args[args.index("--prefix") + 1])
xy = next(a for a in args if a.startswith("python="))[len("python="):]
base = find_interpreter(xy)
copy_interpreter(base, prefix, Reporter())
python = prefix / "bin" / ("python" + xy)
subprocess.run([str(python), "-I", "-m", "ensurepip", "--default-pip"], check=True,
               env=clean_environment(prefix), stdout=subprocess.DEVNULL)
files = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if not p.is_dir())
(prefix / "conda-meta").mkdir()
record = {{"name": "python", "version": base.version, "build": "0", "build_number": 0,
          "files": files, "link": None, "url": "https://conda.anaconda.org/conda-forge/python"}}
(prefix / "conda-meta" / ("python-%s-0.json" % base.version)).write_text(json.dumps(record))
(prefix / "conda-meta" / "history").write_text("")
print("created", prefix)
"""


@pytest.fixture()
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tuple[Path, Path]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "micromamba"
    tool.write_text(STAND_IN.format(python=sys.executable))
    tool.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    return tool, log


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "condamodel"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "condamodel"\nbackend: "python"\n')
    (model / "environment.yml").write_text(
        "name: condamodel\nchannels:\n  - conda-forge\n  - nvidia\ndependencies:\n"
        "  - python=3.11\n  - pip\n  - pip:\n      - numpy<2\n"
    )
    return model


def test_conda_builder_creates_installs_and_packs(
    tmp_path: Path, stand_in: Tuple[Path, Path]
) -> None:
    tool, log = stand_in
    assert find_conda("micromamba") == tool
    model = _model(tmp_path)
    result = pack_env(
        model,
        python="3.10",
        builder="conda",
        conda_exe="micromamba",
        stub="never",
        compress_level=1,
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 1
    create = calls[0]
    assert create[:3] == ["create", "--yes", "--prefix"]
    assert create[4:] == [
        "--override-channels",
        "-c",
        "conda-forge",
        "-c",
        "nvidia",
        "python=3.10",
        "pip",
    ]
    assert result.builder == "micromamba" and result.python == "3.10"
    assert result.archive == model / "condamodel_py3.10.tar.gz"
    with tarfile.open(result.archive) as tar:
        names = set(tar.getnames())
    assert {"bin/conda-unpack", "bin/activate", "bin/python3.10"} <= names  # conda-pack's layout
    assert any(n.startswith("conda-meta/python-3.10") for n in names)
    assert any(n.startswith("lib/python3.10/site-packages/numpy/") for n in names)
    assert any(n.startswith("lib/python3.10/site-packages/tritonpy/") for n in names)
    assert result.verify is not None and set(result.verify.modules) == {"numpy", "tritonpy"}
    config = load_config(model / "config.pbtxt")
    assert config.parameters["EXECUTION_ENV_PATH"].string_value == result.parameter


def test_conda_that_creates_nothing_is_reported(
    tmp_path: Path, stand_in: Tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_MODE", "broken")
    model = _model(tmp_path)
    with pytest.raises(EnvError, match=r"micromamba create finished but .*bin/python does not"):
        pack_env(model, builder="conda", conda_exe="micromamba", stub="never")
    assert sorted(p.name for p in model.iterdir()) == ["1", "config.pbtxt", "environment.yml"]


def test_builder_conda_without_conda_says_how_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CONDA_EXE", raising=False)
    monkeypatch.delenv("MAMBA_EXE", raising=False)
    with pytest.raises(EnvError, match=r"no conda, mamba or micromamba on PATH.*--builder local"):
        pack_env(_model(tmp_path), builder="conda")
