"""Verify an environment archive the way Triton will use it, before declaring success.

1. every member is safe (no absolute paths, ``..``, devices or links pointing outside), checked
   while the archive is unpacked (read once) into a fresh temporary directory elsewhere;
2. it has ``bin/activate``, ``bin/python3`` and ``lib/libpython3.X.so*``;
3. in that unpacked copy, ``source bin/activate`` followed by
   ``python3`` (the environment's own interpreter, found on PATH as the stub finds it) imports
   tritonpy and the modules of every distribution the spec names (read from the installed
   metadata by :mod:`tritonpy.envs._envcheck`: scikit-learn is ``sklearn``), under Python X.Y,
   with ``sys.prefix``, every imported module and the loaded libpython inside the unpacked copy
   (which proves that the archive is relocatable); the distributions in ``skip`` are not
   checked;
4. the environment's tritonpy has the running tritonpy's version (``tritonpy_version``);
5. the model's ``model.py`` (``model_file``) imports there, with tritonpy's fake pb_utils
   installed as ``triton_python_backend_utils`` (import only, as the config tooling does), and
   for a tritonpy model the packages its codecs load on first use (``cv2`` for ``tp.Image``)
   import too: a missing package fails the pack, naming it, instead of the first request.
   The model's import has the last word: when it imports, a distribution module that was
   guessed from the metadata and does not exist is a warning (``VerifyReport.warnings``), not
   a failure; a module that exists and fails to import (a missing system library) always is.

Example::

    report = verify_archive(Path("model/preprocess_py3.10.tar.gz"), "3.10",
                            distributions=["numpy", "opencv-python-headless"])
    report.modules["cv2"]   # '/tmp/tritonpy-verify-.../lib/python3.10/site-packages/cv2/...'
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .._tooling.archives import extract_checked
from .._tooling.errors import ArchiveError
from .._tooling.progress import Reporter, step
from . import _envcheck

#: the check :func:`verify_archive` runs with the environment's own python (its source)
_CHECK = Path(_envcheck.__file__).read_text(encoding="utf-8")
_MARK = _envcheck.MARK  # the line of the check's output that carries its result


@dataclass
class VerifyReport:
    """What verification saw inside the unpacked archive."""

    python: str
    prefix: str
    libpython: str
    modules: Dict[str, str] = field(default_factory=dict)
    members: int = 0
    tritonpy_version: str = ""
    model_imported: bool = False  # the model's model.py imported inside the environment
    codecs_checked: List[str] = field(default_factory=list)  # codecs whose packages imported
    #: distribution (as the spec names it) -> the modules the check imported for it
    import_names: Dict[str, List[str]] = field(default_factory=dict)
    #: problems that did not fail verification (a guessed module that does not exist)
    warnings: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)  # distributions not import-checked


def _canonical_set(names: Sequence[str]) -> Set[str]:
    return {_envcheck.canonical(n) for n in names}


def _required(names: Sequence[str], xy: str) -> List[str]:
    present = set(names)
    missing = [n for n in ("bin/activate", "bin/python3") if n not in present]
    if not any(n.startswith(f"lib/libpython{xy}.so") for n in present):
        missing.append(f"lib/libpython{xy}.so*")
    return missing


def _model_problems(model: Dict[str, Any], model_file: Path) -> List[str]:
    """Messages for a model.py that does not import inside the environment."""
    from ._needs import missing_module_hint

    problems = []
    for module, codec in model["missing"]:
        hint = missing_module_hint(module)
        who = f"{model_file} declares {codec}, which needs" if codec else f"{model_file} imports"
        extra = " (or tritonpy[image])" if codec == "tp.Image" else ""
        extra = " (or tritonpy[torch])" if codec == "tp.TorchTensor" else extra
        problems.append(
            f"{who} the module {module!r}, which the environment lacks: add the package "
            f"that provides it ({hint}){extra} to the spec (the model directory's "
            "requirements.txt or environment.yml, or --env/--requirements FILE)"
        )
    if model["error"]:
        problems.append(
            f"importing {model_file} failed inside the environment:\n{model['error'].rstrip()}"
        )
    return problems


def _unfound_messages(
    result: Dict[str, Any], model_file: Optional[Path]
) -> Tuple[List[str], List[str]]:
    """(problems, warnings) for the modules guessed from a distribution's metadata that do
    not exist in the environment: warnings when the model file imported there, else problems."""
    model: Dict[str, Any] = result.get("model") or {}
    model_ok = bool(model) and not model["missing"] and not model["error"]
    messages = []
    for dist, module in result.get("unfound", []):
        guessed = ", ".join(repr(m) for m in result.get("names", {}).get(dist, [module]))
        messages.append(
            f"distribution {dist}: no module {module!r} in the environment (the modules "
            f"read from its installed metadata: {guessed})"
            + (
                f"; {model_file} imported fine there, so this is not a failure"
                if model_ok
                else "; if it installs no module of that name, skip its import check with "
                f"--skip-import-check {dist} (PackOptions.skip_import_check)"
            )
        )
    return ([], messages) if model_ok else (messages, [])


def _clean_env(home: str) -> Dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    for key in ("TMPDIR",):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def _unpack(archive: Path, root: Path, xy: str) -> List[str]:
    """Check and unpack ``archive`` into ``root`` in one read; refuse one that lacks what
    Triton needs of a Python ``xy`` environment. Returns the member names."""
    names = extract_checked(archive, root)
    missing = _required(names, xy)
    if missing:
        raise ArchiveError(
            f"{archive} is not a usable Python {xy} environment: it lacks "
            f"{', '.join(missing)}. Triton sources bin/activate and the stub loads "
            f"libpython{xy}.so.1.0 from <env>/lib; rebuild it with tritonpy pack-env."
        )
    return names


#: how the stub starts in an environment: up to 25.07 after ``source bin/activate``; from 25.08
#: with only ``<env>/bin`` put first on PATH and ``<env>/lib`` on LD_LIBRARY_PATH (and
#: VIRTUAL_ENV set, PYTHONHOME removed: python_backend r25.08 src/pb_utils.cc)
_SOURCED = 'source "$0/bin/activate" && exec python3 -I -c "$1" "${@:2}"'
_PATHS_ONLY = (
    'export PATH="$0/bin:$PATH" LD_LIBRARY_PATH="$0/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" '
    'VIRTUAL_ENV="$0"; unset PYTHONHOME; exec python3 -I -c "$1" "${@:2}"'
)


def _run_check(
    archive: Path,
    root: Path,
    xy: str,
    arguments: Dict[str, Any],
    timeout: float,
    sources_activate: bool = True,
) -> Dict[str, Any]:
    """Run :data:`_CHECK` with the unpacked environment's own python, started as the target
    release's stub starts (``sources_activate``: after ``source bin/activate``; else PATH and
    LD_LIBRARY_PATH only), in a clean process environment; return what it printed."""
    work = root.parent
    command = _SOURCED if sources_activate else _PATHS_ONLY
    try:
        done = subprocess.run(
            ["bash", "-c", command, str(root), _CHECK, json.dumps(arguments)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=_clean_env(str(work)),
            cwd=str(work),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ArchiveError(f"cannot run the python of {archive}: {exc}") from exc
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(_MARK)]
    if done.returncode != 0 or not lines:
        raise ArchiveError(
            f"the python of {archive} does not start after unpacking elsewhere (exit "
            f"{done.returncode}):\n{(done.stderr or done.stdout)[-2000:]}\nIs libpython{xy} "
            "in <env>/lib and bin/activate setting LD_LIBRARY_PATH?"
        )
    result: Dict[str, Any] = json.loads(lines[-1][len(_MARK) :])
    return result


def _place_problems(result: Dict[str, Any], root: Path, xy: str) -> List[str]:
    """The Python version, ``sys.prefix``, libpython and every imported module must be those
    of the unpacked copy (which proves that the archive is relocatable)."""
    real_root = os.path.realpath(root)

    def inside(path: str) -> bool:
        real = os.path.realpath(path) if path else ""
        return bool(real) and (real == real_root or real.startswith(real_root + os.sep))

    problems = list(result["errors"])
    if result["version"] != xy:
        problems.append(f"the environment runs Python {result['version']}, expected {xy}")
    if not inside(result["prefix"]):
        problems.append(f"sys.prefix is {result['prefix']}, outside the unpacked copy")
    if result["libpython"] and not inside(result["libpython"]):
        problems.append(f"libpython was loaded from {result['libpython']}, not from <env>/lib")
    for name, path in result["modules"].items():
        if path and not inside(path):
            problems.append(f"module {name} was imported from {path}, outside the archive")
    return problems


def _version_problems(result: Dict[str, Any], tritonpy_version: Optional[str]) -> List[str]:
    found_version = result.get("tritonpy_version", "")
    imported = "tritonpy" in result["modules"]
    if tritonpy_version and imported and found_version != tritonpy_version:
        return [
            f"the environment's tritonpy is version {found_version or 'unknown'}, but the "
            f"running tritonpy is {tritonpy_version}; rebuild with tritonpy pack-env --force "
            "(without --tritonpy, which installs the running tritonpy)"
        ]
    return []


def verify_archive(
    archive: Path,
    xy: str,
    *,
    distributions: Sequence[str] = (),
    tritonpy_version: Optional[str] = None,
    model_file: Optional[Path] = None,
    codecs: Sequence[Tuple[str, str, str]] = (),
    skip: Sequence[str] = (),
    reporter: Optional[Reporter] = None,
    timeout: float = 600.0,
    sources_activate: bool = True,
) -> VerifyReport:
    """Check ``archive`` as described in the module docstring; raise :class:`ArchiveError`
    saying what is wrong and how to fix it. ``codecs`` lists (codec module, class name, module
    it needs), e.g. ``("tritonpy._runtime.codecs.image", "Image", "cv2")``; ``skip`` names
    distributions whose modules are not imported; ``sources_activate`` False starts the
    python as Triton 25.08 and later start the stub (no ``source bin/activate``).

    Example::

        verify_archive(Path("model/env_py3.10.tar.gz"), "3.10", distributions=["numpy"],
                       tritonpy_version="0.1.0", model_file=Path("model/1/model.py"))
    """
    reporter = reporter or Reporter()
    skipped = [d for d in distributions if _envcheck.canonical(d) in _canonical_set(skip)]
    arguments = {
        "distributions": list(distributions),
        "skip": list(skip),
        "model": str(Path(model_file).resolve()) if model_file is not None else None,
        "codecs": [list(c) for c in codecs],
    }
    work = Path(tempfile.mkdtemp(prefix="tritonpy-verify-"))
    try:
        root = work / "env"
        with step(reporter, f"checking and unpacking the archive members into {work}"):
            names = _unpack(archive, root, xy)
        with step(reporter, "importing with the env's python"):
            result = _run_check(archive, root, xy, arguments, timeout, sources_activate)
        problems = _place_problems(result, root, xy) + _version_problems(result, tritonpy_version)
        model = result.get("model") if model_file is not None else None
        if model and model_file is not None:
            problems.extend(_model_problems(model, Path(model_file)))
        unfound, warnings = _unfound_messages(result, model_file)
        problems.extend(unfound)
        if problems:
            raise ArchiveError(
                f"{archive} failed verification (unpacked to {root}):\n- "
                + "\n- ".join(problems)
                + "\nFix the spec (names, versions) or rebuild with tritonpy pack-env --force."
            )
        return _report(result, len(names), model, warnings, skipped)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _report(
    result: Dict[str, Any],
    members: int,
    model: Optional[Dict[str, Any]],
    warnings: List[str],
    skipped: List[str],
) -> VerifyReport:
    """What a passed verification found, from the in-environment check's ``result``."""
    return VerifyReport(
        python=result["version"],
        prefix=result["prefix"],
        libpython=result["libpython"],
        modules=result["modules"],
        members=members,
        tritonpy_version=result.get("tritonpy_version", ""),
        model_imported=bool(model),
        codecs_checked=list(model["codecs"]) if model else [],
        import_names=dict(result.get("names", {})),
        warnings=warnings,
        skipped=skipped,
    )
