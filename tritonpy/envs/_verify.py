"""Verify an environment archive the way Triton will use it, before declaring success.

1. every member is safe (no absolute paths, ``..``, devices or links pointing outside), checked
   while the archive is unpacked (read once) into a fresh temporary directory elsewhere;
2. it has ``bin/activate``, ``bin/python3`` and ``lib/libpython3.X.so*``;
3. in that unpacked copy, ``source bin/activate`` followed by
   ``python3`` (the environment's own interpreter, found on PATH as the stub finds it) imports
   tritonpy and the top-level modules of every distribution the spec names, under Python X.Y,
   with ``sys.prefix``, every imported module and the loaded libpython inside the unpacked copy
   (which proves that the archive is relocatable);
4. the environment's tritonpy has the running tritonpy's version (``tritonpy_version``);
5. the model's ``model.py`` (``model_file``) imports there, with tritonpy's fake pb_utils
   installed as ``triton_python_backend_utils`` (import only, as the config tooling does), and
   for a tritonpy model the packages its codecs load on first use (``cv2`` for ``tp.Image``)
   import too: a missing package fails the pack, naming it, instead of the first request.

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
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._tooling.archives import extract_checked
from .._tooling.errors import ArchiveError
from .._tooling.progress import Reporter, step

_MARK = "TRITONPY-VERIFY "  # the line of the check's output that carries its result

_CHECK = r"""
import importlib, json, os, sys, traceback
try:
    import importlib.metadata as md
except ImportError:
    md = None
args = json.loads(sys.argv[1])
errors, modules = [], ["tritonpy"]
for name in args["distributions"]:
    try:
        dist = md.distribution(name)
    except Exception as exc:
        errors.append("distribution %s is not installed (%s)" % (name, exc))
        continue
    top = (dist.read_text("top_level.txt") or "").split()
    if not top:
        for f in dist.files or []:
            head = f.parts[0]
            if head.endswith((".dist-info", ".data", ".pth")) or head in ("..", "__pycache__"):
                continue
            top.append(head.split(".")[0])
    modules.extend(t for t in top if t and not t.startswith("_") and t not in ("test", "tests"))
found = {}
for name in dict.fromkeys(modules):
    try:
        found[name] = getattr(importlib.import_module(name), "__file__", None) or ""
    except BaseException:
        errors.append("import %s failed:\n%s" % (name, traceback.format_exc(limit=-4)))
lib = ""
try:
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libpython" in line and "/" in line:
                lib = line[line.index("/"):].strip()
                break
except OSError:
    pass
model = None
if args["model"]:
    model = {"missing": [], "error": "", "codecs": []}
    try:
        import importlib.util
        from tritonpy.testing import fake_pb_utils
        sys.modules["triton_python_backend_utils"] = fake_pb_utils
        folder = os.path.dirname(args["model"])
        sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location("_tritonpy_verify_model", args["model"])
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        cls = getattr(module, "TritonPythonModel", None)
        import tritonpy
        if isinstance(cls, type) and issubclass(cls, tritonpy.Model):
            declared = list((cls.inputs or {}).values()) + list((cls.outputs or {}).values())
            for codec_module, codec_name, needed in args["codecs"]:
                klass = getattr(importlib.import_module(codec_module), codec_name)
                if any(isinstance(c, klass) for c in declared):
                    model["codecs"].append(codec_name)
                    try:
                        importlib.import_module(needed)
                    except ModuleNotFoundError:
                        model["missing"].append([needed, "tp." + codec_name])
                    except BaseException:
                        model["error"] += "tp.%s needs %s, which fails to import:\n%s" % (
                            codec_name, needed, traceback.format_exc(limit=-3))
    except ModuleNotFoundError as exc:
        model["missing"].append([exc.name or "?", ""])
    except BaseException:
        model["error"] = traceback.format_exc(limit=-4)
tp_version = ""
if "tritonpy" in found:
    tp_version = getattr(sys.modules["tritonpy"], "__version__", "")
print("TRITONPY-VERIFY " + json.dumps({
    "version": "%d.%d" % sys.version_info[:2], "prefix": sys.prefix,
    "executable": sys.executable, "modules": found, "libpython": lib, "errors": errors,
    "tritonpy_version": tp_version, "model": model}))
"""


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


def _run_check(
    archive: Path, root: Path, xy: str, arguments: Dict[str, Any], timeout: float
) -> Dict[str, Any]:
    """Run :data:`_CHECK` with the unpacked environment's own python (after ``source
    bin/activate``, in a clean process environment) and return what it printed."""
    work = root.parent
    command = 'source "$0/bin/activate" && exec python3 -I -c "$1" "${@:2}"'
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
    reporter: Optional[Reporter] = None,
    timeout: float = 600.0,
) -> VerifyReport:
    """Check ``archive`` as described in the module docstring; raise :class:`ArchiveError`
    saying what is wrong and how to fix it. ``codecs`` lists (codec module, class name, module
    it needs), e.g. ``("tritonpy._runtime.codecs.image", "Image", "cv2")``.

    Example::

        verify_archive(Path("model/env_py3.10.tar.gz"), "3.10", distributions=["numpy"],
                       tritonpy_version="0.1.0", model_file=Path("model/1/model.py"))
    """
    reporter = reporter or Reporter()
    arguments = {
        "distributions": list(distributions),
        "model": str(Path(model_file).resolve()) if model_file is not None else None,
        "codecs": [list(c) for c in codecs],
    }
    work = Path(tempfile.mkdtemp(prefix="tritonpy-verify-"))
    try:
        root = work / "env"
        with step(reporter, f"checking and unpacking the archive members into {work}"):
            names = _unpack(archive, root, xy)
        with step(reporter, "importing with the env's python"):
            result = _run_check(archive, root, xy, arguments, timeout)
        problems = _place_problems(result, root, xy) + _version_problems(result, tritonpy_version)
        model = result.get("model") if model_file is not None else None
        if model and model_file is not None:
            problems.extend(_model_problems(model, Path(model_file)))
        if problems:
            raise ArchiveError(
                f"{archive} failed verification (unpacked to {root}):\n- "
                + "\n- ".join(problems)
                + "\nFix the spec (names, versions) or rebuild with tritonpy pack-env --force."
            )
        return VerifyReport(
            result["version"],
            result["prefix"],
            result["libpython"],
            result["modules"],
            len(names),
            result.get("tritonpy_version", ""),
            bool(model),
            list(model["codecs"]) if model else [],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
