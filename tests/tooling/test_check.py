"""tritonpy check: every rule against its golden repositories (tests/golden/check/<CODE>/fail
and .../pass), with the exact message expected; environments, stubs and archives are built in
tmp_path at test time (no binaries in the repository)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from tritonpy._tooling.elf import ElfError, linked_python, needed_libraries
from tritonpy.check import CheckError, check_repository
from tritonpy.check._cli import add_parser
from tritonpy.check._context import Repository
from tritonpy.check._sequences import CODES as SEQUENCE_CODES

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "check"


def stub(python: str) -> Path:
    """The nvidia-pytriton wheel's prebuilt stub for ``python``: the real ELF files the stub
    rules read. Where the wheel is not installed the calling test skips, saying so (fails in
    CI, which must run it)."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        missing = pytest.fail if os.environ.get("CI") else pytest.skip
        missing(
            "needs the nvidia-pytriton wheel's prebuilt stubs (real ELF files to read): "
            "pip install 'tritonpy[server]'"
        )
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "tritonserver" / "python_backend_stubs" / python / "triton_python_backend_stub"


def golden(code: str, kind: str, tmp_path: Path) -> Path:
    """A copy of tests/golden/check/<code>/<kind> in tmp_path (tests may add files). Files
    stored as ``model.py.txt`` (invalid Python that linters must skip) become ``model.py``."""
    target = tmp_path / f"{code}_{kind}"
    shutil.copytree(GOLDEN / code / kind, target)
    for stored in target.rglob("model.py.txt"):
        stored.rename(stored.with_name("model.py"))
    return target


def env_tree(
    root: Path,
    python: str = "3.10",
    numpy: Optional[str] = "1.26.4",
    activate: bool = True,
    libpython: bool = True,
) -> Path:
    """A minimal environment layout: bin/activate, lib/libpythonX.Y.so.1.0, numpy's
    dist-info (empty files: the checker reads names, not contents)."""
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    if activate:
        (root / "bin" / "activate").write_text("# activate\n")
    if libpython:
        (root / "lib" / f"libpython{python}.so.1.0").write_bytes(b"")
    if numpy:
        info = root / "lib" / f"python{python}" / "site-packages" / f"numpy-{numpy}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Name: numpy\nVersion: {numpy}\n")
    return root


def env_archive(
    path: Path, tmp: Path, *, extra: Tuple[tarfile.TarInfo, ...] = (), **tree: object
) -> Path:
    """env.tar.gz from env_tree(**tree), members named ./..., plus ``extra`` members."""
    source = env_tree(tmp / "env_source", **tree)  # type: ignore[arg-type]
    with tarfile.open(path, "w:gz") as archive:
        archive.add(source, arcname=".")
        for member in extra:
            data = b"x" * member.size
            archive.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


def member(name: str, *, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = 1 if kind == tarfile.REGTYPE else 0
    return info


def renders(report: object, code: str) -> list:
    return [f.render() for f in report.findings if f.code == code]  # type: ignore[attr-defined]


STATIC: Dict[str, list] = {
    "TP101": [
        (
            "double/: error TP101: model directory 'double' has no config.pbtxt\n    fix: "
            'create it with at least name: "double" and backend: "python" (or run \'tritonpy '
            "config double' for a tritonpy model)"
        ),
    ],
    "TP102": [
        (
            "double/config.pbtxt: error TP102: double/config.pbtxt: not a valid model "
            'configuration: 3:1 : Message type "inference.ModelConfig" has no field named '
            '"instance_groups". (line:column). Field names and values must follow Triton\'s '
            "model_config.proto\n    fix: use the field names and values of Triton's "
            "model_config.proto at the reported line:column"
        ),
    ],
    "TP103": [
        (
            "double/config.pbtxt [name]: error TP103: name is 'twice' but the model "
            "directory is 'double'; Triton refuses to load a model whose name differs from "
            "its directory\n    fix: set name: \"double\" or rename the directory to 'twice'"
        ),
    ],
    "TP104": [
        (
            "double/: error TP104: model 'double' has no numeric version directory, so "
            "Triton loads no version of it\n    fix: put the model files in double/1/"
        ),
    ],
    "TP105": [
        (
            "double/2/model.py: error TP105: version 2 of python-backend model 'double' has "
            "no model.py\n    fix: add double/2/model.py defining TritonPythonModel, or "
            "remove the version directory"
        ),
    ],
    "TP106": [
        (
            "double/1/model.py [line 1]: error TP106: not valid Python: invalid syntax (line "
            "1, column 12)\n    fix: fix the syntax error; the Python backend cannot import "
            "the file"
        ),
    ],
    "TP107": [
        (
            "double/1/model.py [TritonPythonModel]: error TP107: defines no "
            "TritonPythonModel, the class the Python backend instantiates\n    fix: define "
            "class TritonPythonModel, or bind your class: TritonPythonModel = MyModel"
        ),
    ],
    "TP108": [
        (
            "double/config.pbtxt [backend]: error TP108: config.pbtxt names neither a "
            "backend nor a platform, so Triton cannot tell that model.py is a Python-backend "
            'model\n    fix: add backend: "python"'
        ),
    ],
    "TP109": [
        (
            "broken/1/model.py: error TP109: importing it failed: RuntimeError: labels.txt "
            "not found\n    fix: fix the error raised at import time; Triton would fail to "
            "load the model"
        ),
        (
            "double/1/model.py: warning TP109: importing it failed: ModuleNotFoundError: No "
            "module named 'tritonpy_golden_no_such_package'; the declarations could not be "
            "checked\n    fix: install the package where you run 'tritonpy check' (it may "
            "only exist in the model's EXECUTION_ENV_PATH environment)"
        ),
    ],
    "TP110": [
        (
            ".: warning TP110: the repository has no model directory\n    fix: put each model "
            "in its own directory: REPO/<model>/config.pbtxt and REPO/<model>/1/model.py"
        ),
    ],
    "TP201": [
        (
            "double/config.pbtxt [input[Z]]: error TP201: config.pbtxt has input 'Z' but "
            "Double in double/1/model.py does not declare it (declared inputs: ['X'])\n    "
            "fix: declare it in inputs = {...} or remove it from config.pbtxt"
        ),
    ],
    "TP202": [
        (
            "scale/config.pbtxt [input]: warning TP202: config.pbtxt lists inputs ['X'] but "
            "not the declared ['FACTOR']; auto-complete adds them, but the model fails to "
            "load on a server started with --disable-auto-complete-config\n    fix: run "
            "'tritonpy config' to write every declared entry"
        ),
    ],
    "TP203": [
        (
            "double/config.pbtxt [input[X].data_type]: error TP203: input 'X' is TYPE_INT32 "
            "in config.pbtxt but TYPE_FP32 in Double in double/1/model.py\n    fix: make them "
            "agree (run 'tritonpy config' to take the declaration)"
        ),
    ],
    "TP204": [
        (
            "double/config.pbtxt [output[Y].dims]: error TP204: output 'Y' has dims [2, 3] "
            "in config.pbtxt but [-1] in Double in double/1/model.py\n    fix: make them "
            "agree (-1 declared accepts any size there)"
        ),
    ],
    "TP205": [
        (
            "scale/config.pbtxt [input[X].optional]: error TP205: input 'X' is optional in "
            "config.pbtxt but required in Scale in scale/1/model.py\n    fix: make them "
            "agree: optional=True (or a default) on the codec, or optional: true in "
            "config.pbtxt"
        ),
    ],
    "TP206": [
        (
            "double/config.pbtxt [max_batch_size]: error TP206: config.pbtxt sets "
            "max_batch_size 16, above the max_batch_size = 8 of Double in double/1/model.py\n "
            "   fix: lower it in config.pbtxt or raise it on the class"
        ),
    ],
    "TP207": [
        (
            "double/config.pbtxt [model_transaction_policy.decoupled]: error TP207: "
            "config.pbtxt sets decoupled: true but Double in double/1/model.py does not "
            "declare decoupled = True\n    fix: make them agree: set decoupled on the class, "
            "or fix model_transaction_policy in config.pbtxt (run 'tritonpy config')"
        ),
    ],
    "TP208": [
        (
            "double/config.pbtxt [backend]: error TP208: model.py defines a tritonpy model "
            "(Double in double/1/model.py) but config.pbtxt says backend 'onnxruntime', "
            "platform ''\n    fix: set backend: \"python\" and remove platform"
        ),
    ],
    "TP301": [
        (
            "single/config.pbtxt [dynamic_batching]: error TP301: dynamic_batching is set "
            "but max_batch_size is 0: the batcher needs a batch dimension to merge requests "
            "along\n    fix: set max_batch_size > 0 (and declare it on a tritonpy class), or "
            "remove dynamic_batching"
        ),
    ],
    "TP302": [
        (
            "double/config.pbtxt [dynamic_batching.preferred_batch_size]: error TP302: "
            "preferred_batch_size [16] above max_batch_size 8; Triton refuses the "
            "configuration\n    fix: use preferred sizes between 1 and 8"
        ),
    ],
    "TP303": [
        (
            "double/config.pbtxt [instance_group[0].kind]: warning TP303: KIND_GPU instances "
            "for Double, whose codecs and imports are CPU-only: each instance holds a GPU "
            "(and its memory) for CPU work\n    fix: use instance_group { kind: KIND_CPU } "
            "unless infer() really uses the GPU"
        ),
    ],
    "TP401": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[1].model_name]: error TP401: step 1 "
            "runs model 'postprocess', which is not in the repository (models: ['ens', "
            "'post', 'pre'])\n    fix: add postprocess/ to the repository or fix model_name"
        ),
    ],
    "TP402": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[1].input_map[MID]]: error TP402: "
            "step 1 ('post') reads ensemble tensor 'middle', which is neither an ensemble "
            "input (['IN']) nor any step's output_map value (['OUT', 'mid'])\n    fix: map it "
            "from an ensemble input or from an output_map value of a step"
        ),
    ],
    "TP403": [
        (
            "ens/config.pbtxt [output[SCORES]]: error TP403: ensemble output 'SCORES' is "
            "produced by no step\n    fix: add an output_map entry with value 'SCORES' to the "
            "step that computes it"
        ),
    ],
    "TP404": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[0].input_map[IN]]: error TP404: "
            "ensemble tensor 'IN': ensemble 'ens' input IN is TYPE_INT32 but model 'pre' "
            "input IN is TYPE_FP32\n    fix: make the data types agree along the edge (change "
            "the producer's output or the consumer's input)"
        ),
    ],
    "TP405": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[0].input_map[IN]]: error TP405: "
            "ensemble tensor 'IN': shape [-1, 2, 2] from ensemble 'ens' input IN does not "
            "fit [-1, -1] of model 'pre' input IN (a leading -1 is the batch dimension of a "
            "batching model)\n    fix: make the dims agree (-1 matches any size); a batching "
            "model's dims exclude the batch dimension, a non-batching model's include it"
        ),
    ],
    "TP406": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step]: error TP406: the steps form a "
            "cycle: step 0 ('post') -> step 1 ('pre') -> step 0 ('post'); their inputs never "
            "become ready\n    fix: break the cycle: a step may only read ensemble inputs or "
            "tensors of steps that do not depend on it"
        ),
    ],
    "TP407": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[0].output_map]: warning TP407: step "
            "0: output 'EXTRA' of model 'pre' is computed but no output_map takes it\n    "
            "fix: map it to an ensemble tensor if it is needed; otherwise ignore this (or "
            "stop computing it)"
        ),
    ],
    "TP408": [
        (
            "ens/config.pbtxt [max_batch_size]: error TP408: the ensemble allows "
            "max_batch_size 16 but step 0 model 'pre' allows only 8\n    fix: lower the "
            "ensemble's max_batch_size to 8 or raise the step model's"
        ),
        (
            "ens/config.pbtxt [max_batch_size]: error TP408: the ensemble allows "
            "max_batch_size 16 but step 1 model 'post' allows only 8\n    fix: lower the "
            "ensemble's max_batch_size to 8 or raise the step model's"
        ),
    ],
    "TP409": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[1].input_map[NOPE]]: error TP409: "
            "step 1 maps input 'NOPE', but model 'post' has no input of that name (inputs: "
            "['MID'])\n    fix: use one of the model's input names as the input_map key"
        ),
    ],
    "TP410": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[1].input_map]: error TP410: step 1: "
            "required input 'BIAS' of model 'post' is not mapped\n    fix: add input_map { "
            "key: 'BIAS' value: <ensemble tensor> }"
        ),
    ],
    "TP411": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[1].output_map[MID]]: error TP411: "
            "ensemble tensor 'mid' is produced again by step 1 ('pre'): step 0 produces it "
            "already\n    fix: give every output_map value its own tensor name"
        ),
    ],
    "TP412": [
        (
            "ens/config.pbtxt [ensemble_scheduling.step[0].output_map[EXTRA]]: error TP412: "
            "ensemble tensor 'spare' (output EXTRA of step 0, 'pre') is consumed by no step "
            "and is not an ensemble output; Triton refuses the ensemble\n    fix: drop this "
            "output_map entry, map it into a step, or make it an ensemble output"
        ),
    ],
    "TP413": [
        (
            "ens/config.pbtxt [instance_group]: error TP413: instance_group is set on an "
            "ensemble; Triton refuses it (an ensemble has no instances of its own)\n    fix: "
            "remove instance_group from the ensemble; set it on the step models"
        ),
    ],
}


# --------------------------------------------------------------------------------------------
# environments (TP5xx) and archives (TP6xx): golden configs, environments built here
# --------------------------------------------------------------------------------------------

Builder = Callable[[Path, Path], None]


def _archive(**tree: object) -> Builder:
    def build(repo: Path, tmp: Path) -> None:
        env_archive(repo / "double" / "env.tar.gz", tmp, **tree)  # type: ignore[arg-type]

    return build


def _with_stub(python: str, then: Optional[Builder] = None) -> Builder:
    def build(repo: Path, tmp: Path) -> None:
        shutil.copy(stub(python), repo / "double" / "triton_python_backend_stub")
        if then is not None:
            then(repo, tmp)

    return build


def _with_marked_stub(python: str, tail: bytes, then: Optional[Builder] = None) -> Builder:
    """The wheel's stub with ``tail`` appended (still a valid ELF; no longer the wheel's
    bytes, so its release comes from a mark in ``tail`` or is unknown)."""

    def build(repo: Path, tmp: Path) -> None:
        target = repo / "double" / "triton_python_backend_stub"
        target.write_bytes(stub(python).read_bytes() + tail)
        if then is not None:
            then(repo, tmp)

    return build


def _tree(**tree: object) -> Builder:
    def build(repo: Path, tmp: Path) -> None:
        env_tree(repo / "double" / "env", **tree)  # type: ignore[arg-type]

    return build


def _write(name: str, data: bytes) -> Builder:
    def build(repo: Path, tmp: Path) -> None:
        (repo / "double" / name).write_bytes(data)

    return build


def _nothing(repo: Path, tmp: Path) -> None:
    pass


#: code -> (build the failing repo, build the passing repo, check options for both)
ENV_CASES: Dict[str, Tuple[Builder, Builder, Dict[str, str]]] = {
    "TP501": (_nothing, _archive(), {}),
    "TP502": (_nothing, _archive(), {}),
    "TP503": (_write("env.zip", b"PK\x03\x04"), _archive(), {}),
    "TP504": (_tree(activate=False), _tree(), {}),
    "TP505": (_tree(libpython=False), _tree(), {}),
    "TP506": (_with_stub("3.11", _archive()), _with_stub("3.10", _archive()), {}),
    "TP507": (_archive(), _with_stub("3.10", _archive()), {"server_python": "3.12"}),
    "TP508": (_with_stub("3.10"), _with_stub("3.12"), {"server_python": "3.12"}),
    "TP509": (_archive(numpy="2.1.0"), _archive(numpy="1.26.4"), {"triton_version": "24.10"}),
    "TP510": (
        _write("triton_python_backend_stub", b"#!/bin/sh\n"),
        _with_stub("3.10", _archive()),
        {},
    ),
    "TP512": (
        _with_stub("3.13", _archive(python="3.13")),
        _with_stub("3.10", _archive()),
        {"triton_version": "24.10"},
    ),
    "TP513": (
        _with_marked_stub("3.10", b"\0tritonpy-stub-release=r24.12\0", _archive()),
        _with_stub("3.10", _archive()),
        {"triton_version": "24.10"},
    ),
    "TP601": (_archive(extra=(member("/tmp/evil"),)), _archive(), {}),
    "TP602": (_archive(extra=(member("lib/../../evil"),)), _archive(), {}),
    "TP603": (
        _archive(
            extra=(
                member("bin/python", kind=tarfile.SYMTYPE, link="/usr/bin/python3"),
                member("lib/libz.so", kind=tarfile.SYMTYPE, link="../../libz.so"),
                member("lib/hard", kind=tarfile.LNKTYPE, link="../outside"),
            )
        ),
        _archive(extra=(member("bin/python", kind=tarfile.SYMTYPE, link="../lib/x"),)),
        {},
    ),
    "TP604": (_write("env.tar.gz", b"\x1f\x8bnot really gzip"), _archive(), {}),
}


ENV_EXPECTED: Dict[str, list] = {
    "TP501": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP501: "
            "'$$TRITON_MODEL_DIRECTORY/missing.tar.gz' does not exist (looked for "
            "double/missing.tar.gz)\n    fix: build the environment there (tritonpy pack-env "
            "MODEL_DIR, or conda-pack) or fix the path"
        ),
    ],
    "TP502": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP502: "
            "'$$TRITON_MODEL_DIRECTORY/../env.tar.gz' points outside the model directory (to "
            "env.tar.gz)\n    fix: keep the environment inside the model directory: "
            "$$TRITON_MODEL_DIRECTORY/<env>.tar.gz"
        ),
    ],
    "TP503": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP503: "
            "'$$TRITON_MODEL_DIRECTORY/env.zip' is neither a .tar.gz archive nor a "
            "directory\n    fix: point it at a conda-pack .tar.gz or an unpacked environment "
            "directory"
        ),
    ],
    "TP504": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP504: the "
            "environment '$$TRITON_MODEL_DIRECTORY/env' has no bin/activate\n    fix: pack a "
            "conda environment (conda-pack writes bin/activate) or add the script"
        ),
    ],
    "TP505": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP505: the "
            "environment '$$TRITON_MODEL_DIRECTORY/env' needs exactly one "
            "lib/libpythonX.Y.so* (found none); the stub loads the environment's Python from "
            "it\n    fix: create the environment with a shared libpython (conda's python has "
            "one)"
        ),
    ],
    "TP506": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP506: the "
            "environment has Python 3.10 but the stub beside config.pbtxt links "
            "libpython3.11; the stub runs the model without the environment's packages\n    "
            "fix: replace the stub: 'tritonpy stub REPO/double --triton-version YY.MM --python "
            "3.10', or rebuild the environment with Python 3.11: 'tritonpy pack-env "
            "REPO/double --triton-version YY.MM --python 3.11'"
        ),
    ],
    "TP507": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP507: the "
            "environment has Python 3.10 but the server runs Python 3.12 and no "
            "triton_python_backend_stub sits beside config.pbtxt; the server's stub ignores "
            "the environment\n    fix: put a stub for Python 3.10 from the server's release "
            "beside it: 'tritonpy stub REPO/double --triton-version YY.MM --python 3.10', or "
            "rebuild the environment with Python 3.12: 'tritonpy pack-env REPO/double "
            "--triton-version YY.MM --python 3.12'"
        ),
    ],
    "TP508": [
        (
            "double/triton_python_backend_stub: error TP508: the stub links libpython3.10 "
            "but the server runs Python 3.12, and no EXECUTION_ENV_PATH environment provides "
            "Python 3.10; the model cannot start (the launcher may wait forever)\n    fix: "
            "pack an environment with Python 3.10: 'tritonpy pack-env REPO/double "
            "--triton-version YY.MM --python 3.10', or remove the stub to use the server's own"
        ),
    ],
    "TP509": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP509: the "
            "environment has numpy 2.1.0; the Python backend stub of release 24.10 predates "
            "numpy 2 (BYTES inputs fail and outputs come back empty)\n    fix: pin numpy<2 in "
            "the environment's spec and rebuild it: 'tritonpy pack-env REPO/double "
            "--triton-version 24.10 --python 3.10'"
        ),
    ],
    "TP510": [
        (
            "double/triton_python_backend_stub: error TP510: cannot read the stub: not an "
            "ELF file (its first bytes are b'#!/b')\n    fix: put a "
            "triton_python_backend_stub built for the environment's Python from the server's "
            "release branch beside config.pbtxt ('tritonpy stub MODEL_DIR --triton-version "
            "YY.MM')"
        ),
    ],
    "TP512": [
        (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP512: the stub needs "
            "libpython3-419a3a08.13.so.1.0 but neither the environment "
            "'$$TRITON_MODEL_DIRECTORY/env.tar.gz' (its lib/ has libpython3.13.so.1.0) nor the "
            "stub's RPATH provides it; the stub cannot start (error while loading shared "
            "libraries) and the model never loads\n    fix: build a stub linking the "
            "environment's libpython3.13.so.1.0: 'tritonpy stub REPO/double --triton-version "
            "24.10 --python 3.13 --source native'"
        ),
    ],
    "TP513": [
        (
            "double/triton_python_backend_stub: error TP513: the stub is from release 24.12 "
            "(marked tritonpy-stub-release=r24.12 in the binary) but the server is release "
            "24.10; a stub must come from the server's own release branch (it shares its IPC "
            "structures with that release's libtriton_python.so)\n    fix: build or fetch the "
            "r24.10 stub: 'tritonpy stub REPO/double --triton-version 24.10 --python 3.10'"
        ),
    ],
    "TP601": [
        (
            "double/env.tar.gz: error TP601: 1 member with an absolute path: '/tmp/evil'; "
            "Triton's extraction refuses or misplaces them\n    fix: pack the environment "
            "with paths relative to its root (conda-pack does)"
        ),
    ],
    "TP602": [
        (
            "double/env.tar.gz: error TP602: 1 member with '..' in the path: "
            "'lib/../../evil'; Triton's extraction refuses or misplaces them\n    fix: pack "
            "the environment from its root so no path climbs out of it"
        ),
    ],
    "TP603": [
        (
            "double/env.tar.gz: error TP603: 3 members linking outside the archive: "
            "'bin/python -> /usr/bin/python3', 'lib/libz.so -> ../../libz.so', 'lib/hard => "
            "../outside'; Triton's extraction refuses or misplaces them\n    fix: make links "
            "relative and inside the environment, or replace them by copies"
        ),
    ],
    "TP604": [
        (
            "double/env.tar.gz: error TP604: not a readable gzip-compressed tar archive "
            "(ReadError: not a gzip file); Triton cannot extract the environment\n    fix: "
            "rebuild it (tritonpy pack-env MODEL_DIR, or conda-pack -o env.tar.gz)"
        ),
    ],
}


@pytest.mark.parametrize("code", sorted(STATIC))
def test_rule_fails_with_the_exact_message(code: str, tmp_path: Path) -> None:
    report = check_repository(golden(code, "fail", tmp_path))
    assert renders(report, code) == STATIC[code]


@pytest.mark.parametrize("code", sorted(STATIC))
def test_rule_passes_on_the_fixed_repository(code: str) -> None:
    report = check_repository(GOLDEN / code / "pass")
    assert [f.render() for f in report.findings] == []
    assert report.exit_code(strict=True) == 0


@pytest.mark.parametrize("code", sorted(ENV_CASES))
def test_environment_rule_fails_with_the_exact_message(code: str, tmp_path: Path) -> None:
    build, _, options = ENV_CASES[code]
    repo = golden(code, "fail", tmp_path)
    build(repo, tmp_path)
    report = check_repository(repo, **options)
    assert renders(report, code) == ENV_EXPECTED[code]
    assert report.exit_code() == 1


@pytest.mark.parametrize("code", sorted(ENV_CASES))
def test_environment_rule_passes_when_fixed(code: str, tmp_path: Path) -> None:
    _, build, options = ENV_CASES[code]
    repo = golden(code, "pass", tmp_path)
    build(repo, tmp_path)
    report = check_repository(repo, **options)
    assert [f.render() for f in report.findings] == []


def _stub_repo(code: str, build: Builder, tmp_path: Path) -> Path:
    repo = golden(code, "fail", tmp_path)
    build(repo, tmp_path)
    return repo


def test_grafted_libpython_only_warns_without_a_release(tmp_path: Path) -> None:
    """The wheel's 3.13 stub needs the wheel's grafted libpython: it loads where the wheel's
    libraries are on the path (tritonpy serve), so without --triton-version it is a warning."""
    repo = _stub_repo("TP512", _with_stub("3.13", _archive(python="3.13")), tmp_path)
    report = check_repository(repo)
    assert [(f.code, f.severity) for f in report.findings] == [("TP512", "warning")]
    assert report.findings[0].message.endswith(
        "(only the nvidia-pytriton wheel's libraries hold it: it loads under 'tritonpy "
        "serve', not in a Triton container)"
    )
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_a_libpython_under_another_name_is_missing(tmp_path: Path) -> None:
    """The stub needs libpython3.10.so.1.0 exactly; an environment with only libpython3.10.so
    does not provide it."""

    def build(repo: Path, tmp: Path) -> None:
        shutil.copy(stub("3.10"), repo / "double" / "triton_python_backend_stub")
        env = env_tree(repo / "double" / "env", libpython=False)
        (env / "lib" / "libpython3.10.so").write_bytes(b"")

    repo = _stub_repo("TP512", build, tmp_path)
    config = repo / "double" / "config.pbtxt"
    config.write_text(config.read_text().replace("env.tar.gz", "env"))
    report = check_repository(repo, triton_version="24.10")
    assert report.codes == ["TP512"]
    assert "needs libpython3.10.so.1.0 but neither the environment " in report.findings[0].message
    assert "(its lib/ has libpython3.10.so)" in report.findings[0].message
    assert report.findings[0].fix == (
        "rebuild the environment so its lib/ holds libpython3.10.so.1.0: 'tritonpy pack-env "
        "REPO/double --triton-version 24.10 --python 3.10'"
    )


def test_the_wheel_stub_is_known_as_release_24_10(tmp_path: Path) -> None:
    repo = _stub_repo("TP513", _with_stub("3.10", _archive()), tmp_path)
    report = check_repository(repo, triton_version="24.12")
    assert renders(report, "TP513") == [
        "double/triton_python_backend_stub: error TP513: the stub is from release 24.10 (the "
        "nvidia-pytriton 0.7.0 wheel's prebuilt stub for Python 3.10) but the server is "
        "release 24.12; a stub must come from the server's own release branch (it shares its "
        "IPC structures with that release's libtriton_python.so)\n    fix: build or fetch the "
        "r24.12 stub: 'tritonpy stub REPO/double --triton-version 24.12 --python 3.10'"
    ]


def test_a_stub_of_unknown_release_is_an_info_line(tmp_path: Path) -> None:
    repo = _stub_repo("TP513", _with_marked_stub("3.10", b"\0", _archive()), tmp_path)
    report = check_repository(repo, triton_version="24.10")
    assert renders(report, "TP513") == [
        "double/triton_python_backend_stub: info TP513: cannot tell which release built the "
        "stub (no release mark in the binary, not a known wheel stub, not cached); it must "
        "come from the server's branch r24.10\n    fix: to be sure, rebuild it from r24.10: "
        "'tritonpy stub REPO/double --triton-version 24.10 --python 3.10'"
    ]
    assert report.exit_code(strict=True) == 0
    assert report.summary().endswith(": 0 errors, 0 warnings, 1 info")
    assert json.loads(report.to_json())["findings"][0]["severity"] == "info"


def test_a_cached_stub_tells_its_release(tmp_path: Path) -> None:
    from tritonpy.check._stubinfo import stub_release
    from tritonpy.stubs._cache import StubCache

    built = tmp_path / "built"
    built.write_bytes(stub("3.10").read_bytes() + b"\0native\0")
    cache = StubCache(tmp_path / "cache")
    cache.put("24.12", "3.10", built, source="native")
    origin = stub_release(built, cache_root=cache.root)
    assert (origin.release, origin.how) == ("24.12", "the stub cache's r24.12 native stub")
    assert stub_release(built, cache_root=tmp_path / "empty").release is None


TP511_FAIL = [
    "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: warning TP511: model.py imports "
    "tritonpy but the model has no EXECUTION_ENV_PATH environment, and the Python 3.10 of the "
    "release 24.10 container has no tritonpy: the model fails to load there (No module named "
    "'tritonpy')\n    fix: pack its environment: 'tritonpy pack-env REPO/double "
    "--triton-version 24.10', or export the repository with every environment: 'tritonpy "
    "export REPO OUT --triton-version 24.10' (or install tritonpy into your server image)"
]


def test_tritonpy_model_without_environment_warns_for_a_release(tmp_path: Path) -> None:
    repo = golden("TP511", "fail", tmp_path)
    report = check_repository(repo, triton_version="24.10")
    assert renders(report, "TP511") == TP511_FAIL
    assert report.codes == ["TP511"]
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1
    # the embedded server runs tritonpy's own interpreter: nothing to say there
    assert check_repository(repo, server_python="3.11").codes == []
    assert check_repository(repo).codes == []


def test_tritonpy_model_with_its_environment_passes(tmp_path: Path) -> None:
    repo = golden("TP511", "pass", tmp_path)
    env_archive(repo / "double" / "env.tar.gz", tmp_path)
    report = check_repository(repo, triton_version="24.10")
    assert [f.render() for f in report.findings] == []


def test_plain_python_model_without_tritonpy_needs_no_environment(tmp_path: Path) -> None:
    repo = golden("TP511", "fail", tmp_path)
    (repo / "double" / "1" / "model.py").write_text(
        "import numpy as np\n\n\nclass TritonPythonModel:\n"
        "    def execute(self, requests):\n        return []\n"
    )
    assert check_repository(repo, triton_version="24.10").codes == []


def test_tritonpy_imports_are_found_in_any_form() -> None:
    from tritonpy.check._imports import source_imports_tritonpy

    assert source_imports_tritonpy("import numpy, tritonpy.vision")
    assert source_imports_tritonpy("def f():\n    from tritonpy import Model\n")
    assert source_imports_tritonpy("from tritonpy import (\n")  # unparsable: by line
    assert not source_imports_tritonpy("import tritonpy_extras\nfrom . import tritonpy\n")
    assert not source_imports_tritonpy("# import tritonpy\ntext = 'import tritonpy'\n")


def test_missing_protobuf_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # a bare install: tritonclient and protobuf absent (None in sys.modules blocks the import)
    code = (
        "import sys\n"
        "for name in ('tritonclient', 'tritonclient.grpc', 'google.protobuf'):\n"
        "    sys.modules[name] = None\n"
        "from tritonpy.cli import main\n"
        "sys.exit(main(['check', sys.argv[1], '--triton-version', '24.10']))\n"
    )
    repo = golden("TP511", "fail", tmp_path)
    shutil.copytree(repo / "double", repo / "twice")
    done = subprocess.run(
        [sys.executable, "-c", code, str(repo)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "tritonpy: error: tritonpy check needs tritonclient[grpc] and protobuf (not "
        "installed): pip install 'tritonpy[config]'"
    ]


def test_every_rule_has_golden_repositories() -> None:
    # the sequence rules' messages are in tests/tooling/test_check_sequences.py
    documented = set(STATIC) | set(ENV_CASES) | {"TP511"} | set(SEQUENCE_CODES)
    on_disk = {p.name for p in GOLDEN.iterdir() if p.is_dir()}
    assert on_disk == documented
    for code in on_disk:
        assert (GOLDEN / code / "fail").is_dir() and (GOLDEN / code / "pass").is_dir()


def test_relative_env_path_is_a_warning(tmp_path: Path) -> None:
    repo = golden("TP502", "pass", tmp_path)
    config = repo / "double" / "config.pbtxt"
    config.write_text(config.read_text().replace("$$TRITON_MODEL_DIRECTORY/", ""))
    env_archive(repo / "double" / "env.tar.gz", tmp_path)
    report = check_repository(repo)
    assert renders(report, "TP502") == [
        "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: warning TP502: 'env.tar.gz' "
        "is relative: the server resolves it against its own working directory, not the "
        "model directory\n    fix: write $$TRITON_MODEL_DIRECTORY/env.tar.gz"
    ]
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_numpy2_without_a_release_is_a_warning(tmp_path: Path) -> None:
    repo = golden("TP509", "fail", tmp_path)
    env_archive(repo / "double" / "env.tar.gz", tmp_path, numpy="2.0.2")
    report = check_repository(repo)
    assert [(f.severity, f.code) for f in report.findings] == [("warning", "TP509")]
    assert "numpy 2.0.2" in report.findings[0].message
    assert "--triton-version" in report.findings[0].fix
    # 25.01 handles numpy 2, but its container runs Python 3.12, not the environment's 3.10
    assert check_repository(repo, triton_version="25.01").codes == ["TP507"]


def test_stub_python_versions_are_read_from_the_elf_dynamic_section() -> None:
    for python in ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"):
        assert linked_python(stub(python)) == python
    assert "libc.so.6" in needed_libraries(stub("3.10"))
    assert "libpython3.10.so.1.0" in needed_libraries(stub("3.10"))


def test_elf_reader_refuses_non_elf_files(tmp_path: Path) -> None:
    path = tmp_path / "script"
    path.write_text("#!/bin/sh\n")
    with pytest.raises(ElfError, match="not an ELF file"):
        needed_libraries(path)
    truncated = tmp_path / "truncated"
    truncated.write_bytes(stub("3.10").read_bytes()[:100])
    with pytest.raises(ElfError, match="truncated or malformed"):
        needed_libraries(truncated)


def test_bad_arguments_raise_check_error(tmp_path: Path) -> None:
    with pytest.raises(CheckError, match="is not a directory"):
        check_repository(tmp_path / "nope")
    with pytest.raises(CheckError, match=r"not X\.Y"):
        check_repository(tmp_path, server_python="3")
    with pytest.raises(CheckError, match="not both"):
        check_repository(tmp_path, server_python="3.10", triton_version="24.10")


def _run_cli(*argv: str) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["check", *argv])
    result: int = args.func(args)
    return result


def test_cli_exit_codes_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run_cli(str(GOLDEN / "TP203" / "fail")) == 1
    out = capsys.readouterr().out
    assert "error TP203" in out and out.rstrip().endswith("1 error, 0 warnings")
    assert _run_cli(str(GOLDEN / "TP303" / "fail")) == 0  # a warning alone passes
    assert _run_cli(str(GOLDEN / "TP303" / "fail"), "--strict") == 1
    capsys.readouterr()
    assert _run_cli(str(GOLDEN / "TP203" / "fail"), "--json") == 1
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 1 and data["warnings"] == 0
    assert data["findings"][0]["code"] == "TP203"
    assert data["findings"][0]["field"] == "input[X].data_type"
    assert _run_cli(str(GOLDEN / "nope")) == 2
    assert "is not a directory" in capsys.readouterr().err


#: the example repositories of the other test suites (relative to tests/) and their models
EXAMPLE_REPOSITORIES: Dict[str, List[str]] = {
    "integration/conformance_models": [
        "cf_grouped",
        "cf_image",
        "cf_json_out",
        "cf_labels",
        "cf_metrics",
        "cf_metrics_twin",
        "cf_optional",
        "cf_picky",
        "cf_plain",
        "cf_ragged",
        "cf_strings",
        "cf_tensor",
        "cf_text_array",
        "cf_torch",
        "cf_unbatched",
        "cf_words",
    ],
    "runtime/nvidia_examples": ["add_sub", "auto_complete", "repeat", "square"],
}


@pytest.mark.parametrize("where", sorted(EXAMPLE_REPOSITORIES))
def test_example_repositories_have_no_errors(where: str) -> None:
    repo = Path(__file__).resolve().parents[1] / where
    # the check really sees every model: each config parses and each model.py imports
    scanned = Repository.scan(repo)
    assert sorted(scanned.models) == EXAMPLE_REPOSITORIES[where]
    for entry in scanned:
        assert entry.config is not None, entry.config_error
        assert entry.is_python and entry.loaded is not None, (entry.name, entry.load_error)
    report = check_repository(repo, server_python="3.11")
    assert report.errors == [], report.render_text()


def test_rendered_templates_check_clean(tmp_path: Path) -> None:
    from tritonpy import templates

    names = {
        "digits_preprocess": "digits_preprocess",
        "digits_classifier": "digits_classifier",
        "digits_postprocess": "digits_postprocess",
    }
    templates.render_template("image_preprocess", "digits_preprocess", tmp_path)
    templates.render_template("torch_model", "digits_classifier", tmp_path)
    templates.render_template("classification_postprocess", "digits_postprocess", tmp_path)
    templates.render_template("detection_postprocess", "detection_postprocess", tmp_path)
    templates.render_template("ensemble_classifier", "digits", tmp_path, models=names)
    for release in ("24.10", "24.12"):
        report = check_repository(tmp_path, triton_version=release)
        # no errors; each python model still needs its environment for the release (TP511)
        assert report.errors == [], report.render_text()
        assert {(f.code, f.file.split("/")[0]) for f in report.warnings} == {
            ("TP511", name) for name in [*names.values(), "detection_postprocess"]
        }
        assert check_repository(tmp_path, server_python="3.11").findings == []
    # the ensemble's edges are really checked: a dtype change is caught
    config = tmp_path / "digits" / "config.pbtxt"
    config.write_text(config.read_text().replace("TYPE_INT64", "TYPE_INT32"))
    assert check_repository(tmp_path).codes == ["TP404"]


# ------------------------------------------------- imports inside the model's own environment
ENV_MODEL = """import yaml  # the tool's virtualenv has PyYAML; the model's environment has not

import tritonpy as tp


class Reader(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 4

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = Reader
"""


def _env_repo(tmp_path: Path, env: str, source: str = ENV_MODEL) -> Path:
    model = tmp_path / "repo" / "reader"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(source)
    (model / "config.pbtxt").write_text(
        'name: "reader"\nbackend: "python"\n'
        f'parameters {{ key: "EXECUTION_ENV_PATH" value {{ string_value: "{env}" }} }}\n'
    )
    return tmp_path / "repo"


def test_a_package_missing_from_the_model_environment_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import XY, mini_env

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    import yaml  # noqa: F401  (the old behaviour, importing here, would pass)

    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env")
    mini_env(repo / "reader" / "env")
    report = check_repository(repo)
    (finding,) = [f for f in report.findings if f.code == "TP109"]
    assert (finding.severity, finding.file) == ("error", "reader/1/model.py")
    assert finding.message == (
        f"importing it inside its environment $$TRITON_MODEL_DIRECTORY/env (Python {XY}) "
        "failed: ModuleNotFoundError: No module named 'yaml'"
    )
    assert finding.fix == (
        "the environment $$TRITON_MODEL_DIRECTORY/env lacks 'yaml': add pyyaml to the model's "
        "spec (REPO/reader/requirements.txt or environment.yml) and rebuild it: 'tritonpy "
        "pack-env REPO/reader --triton-version YY.MM --force'"
    )
    # --no-envs: imported here, as before, where PyYAML is installed
    assert [f.code for f in check_repository(repo, envs=False).findings] == []


def test_declarations_are_read_inside_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import mini_archive

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    # a package the tool lacks, which the environment has (a stand-in module on its path)
    source = ENV_MODEL.replace("import yaml", "import tritonpy_only_in_env")
    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env.tar.gz", source)
    archive = mini_archive(repo / "reader" / "env.tar.gz")
    packages = tmp_path / "repo" / "reader" / "env-src-packages"
    (packages / "tritonpy_only_in_env.py").write_text("")
    config = repo / "reader" / "config.pbtxt"
    config.write_text(
        config.read_text() + 'input { name: "X" data_type: TYPE_INT32 dims: [ -1 ] }\n'
    )
    report = check_repository(repo)
    assert [f.code for f in report.findings] == ["TP203"]  # the declarations were read
    assert "but TYPE_FP32 in Reader in reader/1/model.py" in report.findings[0].message
    # unpacked once, into the cache, by the archive's digest
    (unpacked,) = (tmp_path / "cache" / "envs" / "unpacked").iterdir()
    assert (unpacked / "bin" / "python3").exists() and archive.is_file()
    assert check_repository(repo, envs=False).codes == ["TP109"]  # the tool lacks the module


def test_build_envs_imports_in_the_environment_the_spec_declares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import XY, FakeBuilds

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    builds = FakeBuilds(tmp_path / "sources").install(monkeypatch)
    repo = tmp_path / "repo"
    model = repo / "reader"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(ENV_MODEL)
    (model / "config.pbtxt").write_text('name: "reader"\nbackend: "python"\n')
    (model / "environment.yml").write_text(f"dependencies:\n  - python={XY}\n  - pyyaml\n")
    # without a build the tool's Python imports it (it has PyYAML); the spec's environment
    # (numpy and tritonpy here) lacks it: --build-envs finds that out
    assert "TP109" not in check_repository(repo, triton_version="24.10").codes
    report = check_repository(repo, triton_version="24.10", build_envs=True)
    (finding,) = [f for f in report.findings if f.code == "TP109"]
    assert finding.severity == "error" and "No module named 'yaml'" in finding.message
    assert finding.fix.startswith(f"add pyyaml (it provides 'yaml') to {model / 'environment.yml'}")
    assert builds.models == ["reader"]
    # built once: a later check finds it in the cache, without --build-envs
    assert "TP109" in check_repository(repo, triton_version="24.10").codes
    assert builds.models == ["reader"]
    with pytest.raises(CheckError, match="needs triton_version"):
        check_repository(repo, build_envs=True)


def test_an_environment_that_cannot_run_here_falls_back_to_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env")
    env = repo / "reader" / "env"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "activate").write_text("")
    (env / "bin" / "python3").write_text(
        "#!/bin/sh\necho 'cannot execute binary file' >&2\nexit 126\n"
    )
    (env / "bin" / "python3").chmod(0o755)
    report = check_repository(repo)
    (finding,) = [f for f in report.findings if f.code == "TP109"]
    assert finding.severity == "warning"
    assert finding.message.startswith(
        "its environment $$TRITON_MODEL_DIRECTORY/env cannot run here (the python of the "
        f"environment {env} does not start (exit 126): cannot execute binary file); "
    )
    assert finding.message.endswith("model.py was imported in the tool's Python instead")


def test_cli_no_envs_imports_in_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mini_envs import mini_env

    from tritonpy.cli import main

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env")
    mini_env(repo / "reader" / "env")
    assert main(["check", str(repo)]) == 1
    assert "error TP109: importing it inside its environment" in capsys.readouterr().out
    assert main(["check", str(repo), "--no-envs"]) == 0


def test_an_environment_without_tritonpy_says_to_rebuild_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env")
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    env = repo / "reader" / "env"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(env)], check=True)
    report = check_repository(repo, triton_version="24.10")
    (finding,) = [f for f in report.findings if f.code == "TP109"]
    assert finding.message.endswith("failed: ModuleNotFoundError: No module named 'yaml'")
    (repo / "reader" / "1" / "model.py").write_text(ENV_MODEL.replace("import yaml", ""))
    report = check_repository(repo, triton_version="24.10")
    (finding,) = [f for f in report.findings if f.code == "TP109"]
    assert finding.fix == (
        "the environment $$TRITON_MODEL_DIRECTORY/env has no tritonpy: rebuild it with "
        "'tritonpy pack-env REPO/reader --triton-version 24.10 --force' (it installs the "
        "running tritonpy)"
    )


def test_a_plain_model_imports_inside_an_environment_without_tritonpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    plain = (
        "from triton_python_backend_utils import InferenceResponse, Tensor\n"
        "import triton_python_backend_utils as pb_utils\n\n\n"
        "class TritonPythonModel:\n"
        "    error = pb_utils.TritonError\n\n"
        "    def execute(self, requests):\n"
        "        return [InferenceResponse([Tensor('B', r)]) for r in requests]\n"
    )
    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env", plain)
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    subprocess.run(
        [str(base), "-m", "venv", "--without-pip", str(repo / "reader" / "env")], check=True
    )
    entry = Repository.scan(repo).models["reader"]
    assert entry.env_import is not None and entry.env_import.ok, entry.env_import
    assert entry.env_import.defined and not entry.env_import.is_tritonpy
    assert "TP109" not in check_repository(repo).codes


def test_importing_inside_an_environment_writes_nothing_into_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import mini_env

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    repo = _env_repo(tmp_path, "$$TRITON_MODEL_DIRECTORY/env", ENV_MODEL.replace("yaml", "json"))
    mini_env(repo / "reader" / "env")
    (repo / "reader" / "1" / "helper.py").write_text("VALUE = 1\n")
    model = repo / "reader" / "1" / "model.py"
    model.write_text("import helper\n" + model.read_text())
    before = sorted(p.relative_to(repo).as_posix() for p in (repo / "reader" / "1").rglob("*"))
    assert check_repository(repo).findings == []
    after = sorted(p.relative_to(repo).as_posix() for p in (repo / "reader" / "1").rglob("*"))
    assert after == before  # no __pycache__
