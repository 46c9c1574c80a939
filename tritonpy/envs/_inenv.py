"""Import a model's ``model.py`` inside its own environment's Python and read its declarations
there, the way the server will run it (``tritonpy check`` and ``tritonpy export``).

An environment archive is unpacked once into tritonpy's cache, keyed by the archive's SHA-256
(``<cache>/envs/unpacked/<digest>/``; members checked as they are read, as pack-env's
verification does); a directory environment is used where it is. The environment's own
``bin/python3`` runs after ``source bin/activate``, in a clean process environment (what
Triton's stub sees), imports ``model.py`` with a stand-in ``triton_python_backend_utils`` (the
environment's tritonpy's fake pb_utils when it has tritonpy, else a module that gives a
placeholder for any name: import time only) and prints what it found: the Python version, a
missing module, a traceback, and for a ``tritonpy.Model`` the declared configuration,
``decoupled`` and whether its work is CPU-only.

Example::

    found = import_in_environment(Path("repo/m/m_py3.10.tar.gz"), Path("repo/m/1/model.py"))
    found.python, found.missing, found.is_tritonpy      # ('3.10', None, True)
    found.declared["max_batch_size"]                    # 8
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, Optional, Tuple

from .._tooling.archives import extract_checked, member_name
from .._tooling.digests import file_sha256
from .._tooling.errors import ArchiveError
from .._tooling.installation import cache_directory

_MARK = "TRITONPY-INENV "
_COMPLETE = ".tritonpy-unpacked"  # written last: an unpacked copy without it is partial

#: top-level packages whose import suggests GPU work (the check's TP303 rule)
GPU_MODULES: FrozenSet[str] = frozenset(
    {"torch", "cupy", "tensorflow", "jax", "onnxruntime", "tensorrt", "numba", "triton"}
)

_SCRIPT = r"""
import importlib, importlib.util, json, os, sys, traceback, types
args = json.loads(sys.argv[1])
out = {"python": "%d.%d" % sys.version_info[:2], "prefix": sys.prefix, "missing": None,
       "error": "", "defined": False, "tritonpy": False, "name": "", "declared": None,
       "decoupled": None, "cpu_only": False, "tritonpy_version": ""}
try:
    try:
        from tritonpy.testing import fake_pb_utils as pb
    except ImportError:  # no tritonpy here: any name a plain model takes at import time
        pb = types.ModuleType("triton_python_backend_utils")
        pb.__getattr__ = lambda name: type(name, (), {})
    sys.modules["triton_python_backend_utils"] = pb
    path = args["model"]
    version_dir = os.path.dirname(path)
    sys.path[:0] = [version_dir, os.path.dirname(version_dir)]
    name = "_tritonpy_inenv_model"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    cls = getattr(module, "TritonPythonModel", None)
    out["defined"] = isinstance(cls, type)
    out["name"] = getattr(cls, "__name__", "")
    tp = sys.modules.get("tritonpy")
    if tp is not None:
        out["tritonpy_version"] = getattr(tp, "__version__", "")
    if tp is not None and isinstance(cls, type) and issubclass(cls, tp.Model):
        out["tritonpy"] = True
        out["declared"] = cls.declared_config()
        decoupled = getattr(cls, "decoupled", None)
        out["decoupled"] = decoupled if isinstance(decoupled, bool) else None
        cpu = True
        try:
            from tritonpy._runtime.codecs.torch_tensor import TorchTensor
        except ImportError:
            TorchTensor = None
        for codec in list(cls.inputs.values()) + list(cls.outputs.values()):
            if TorchTensor is not None and isinstance(codec, TorchTensor):
                cpu = cpu and getattr(codec, "device", None) == "cpu"
        for value in vars(module).values():
            origin = value.__name__ if isinstance(value, types.ModuleType) else getattr(
                value, "__module__", None)
            if isinstance(origin, str) and origin.split(".")[0] in args["gpu"]:
                cpu = False
        out["cpu_only"] = cpu
except ModuleNotFoundError as exc:
    out["missing"] = exc.name or str(exc)
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
except BaseException as exc:
    out["error"] = "%s: %s\n%s" % (type(exc).__name__, exc, traceback.format_exc(limit=-4))
print("TRITONPY-INENV " + json.dumps(out))
"""


@dataclass(frozen=True)
class EnvImport:
    """What importing ``model.py`` inside an environment gave.

    ``python``: the environment's X.Y; ``missing``: the module a ``ModuleNotFoundError``
    named (None when the import worked or failed otherwise); ``error``: the exception (with a
    short traceback), empty on success; ``defined``: ``TritonPythonModel`` is a class;
    ``is_tritonpy``: it subclasses the environment's ``tritonpy.Model``, then ``declared`` is
    its ``declared_config()``, ``decoupled`` its declaration and ``cpu_only`` whether its
    codecs and imports are CPU-only; ``root``: where the environment ran from."""

    environment: Path
    root: Path
    python: str
    missing: Optional[str] = None
    error: str = ""
    defined: bool = False
    is_tritonpy: bool = False
    class_name: str = ""
    declared: Optional[Dict[str, Any]] = None
    decoupled: Optional[bool] = None
    cpu_only: bool = False
    tritonpy_version: str = ""
    details: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error


class EnvStartError(ArchiveError):
    """The environment's python did not start (another architecture, a broken copy)."""


def has_interpreter(root: Path) -> bool:
    """True when ``root`` (an environment directory) has ``bin/activate`` and ``bin/python3``:
    what an environment built by pack-env or conda-pack always has."""
    return (root / "bin" / "activate").is_file() and os.path.exists(root / "bin" / "python3")


def archive_has_interpreter(names: Iterable[str]) -> bool:
    """The same question for the member names of an archive (as tar lists them, ``./``
    prefixes and all)."""
    found = {member_name(name) for name in names}
    return "bin/activate" in found and "bin/python3" in found


#: digests by (device, inode, size, mtime): hard links of one archive are hashed once
_DIGESTS: Dict[Tuple[int, int, int, int], str] = {}
#: imports by (environment root, model file, its size and mtime): a run imports a file once
_IMPORTS: Dict[Tuple[str, str, int, int, bool], EnvImport] = {}


def _digest(archive: Path) -> str:
    info = archive.stat()
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_sha256(archive)
    return _DIGESTS[key]


def unpacked_environment(archive: Path, cache: Optional[Path] = None) -> Path:
    """The unpacked copy of ``archive`` in the cache (unpacked now when it is not there yet,
    checked member by member; :class:`ArchiveError` for an unsafe or unreadable archive).

    Example::

        root = unpacked_environment(Path("repo/m/m_py3.10.tar.gz"))
        (root / "bin" / "python3").exists()     # True
    """
    digest = _digest(archive)
    base = (cache or cache_directory()) / "envs" / "unpacked"
    target = base / digest[:32]
    if (target / _COMPLETE).is_file():
        return target
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=base))
    try:
        extract_checked(archive, work / "env")
        (work / "env" / _COMPLETE).write_text(f"{archive.name}\n{digest}\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)  # a partial copy of an interrupted run
        os.replace(work / "env", target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _clean_env(home: str) -> Dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def import_in_root(
    root: Path,
    model_file: Path,
    *,
    environment: Optional[Path] = None,
    timeout: float = 300.0,
    remember: bool = False,
    sources_activate: bool = True,
) -> EnvImport:
    """Import ``model_file`` with the python of the environment directory ``root`` (see the
    module docstring), started as the target release starts the stub (``sources_activate``
    False: as 25.08 and later do, PATH and LD_LIBRARY_PATH only, no ``source bin/activate``).
    Raises :class:`EnvStartError` when that python does not start.
    With ``remember`` (an unpacked archive: its contents never change), the same file imported
    again, unchanged, gives the first answer."""
    run = functools.partial(
        _run_import,
        root,
        model_file,
        environment=environment,
        timeout=timeout,
        sources_activate=sources_activate,
    )
    if not remember:
        return run()
    info = model_file.stat()
    memo = (
        str(root.resolve()),
        str(model_file.resolve()),
        info.st_size,
        info.st_mtime_ns,
        sources_activate,
    )
    if memo in _IMPORTS:
        return _IMPORTS[memo]
    found = run()
    _IMPORTS[memo] = found
    return found


#: how the stub's environment is set up: up to 25.07 by ``source bin/activate``; from 25.08
#: Triton sets PATH, LD_LIBRARY_PATH and VIRTUAL_ENV and removes PYTHONHOME itself
_ACTIVATE = 'source "$0/bin/activate" >/dev/null 2>&1; '
_PATHS_ONLY = (
    'export PATH="$0/bin:$PATH" LD_LIBRARY_PATH="$0/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" '
    'VIRTUAL_ENV="$0"; unset PYTHONHOME; '
)


def _run_import(
    root: Path,
    model_file: Path,
    *,
    environment: Optional[Path],
    timeout: float,
    sources_activate: bool,
) -> EnvImport:
    arguments = {"model": str(model_file.resolve()), "gpu": sorted(GPU_MODULES)}
    # -B: no __pycache__ written into the user's model directory
    setup = _ACTIVATE if sources_activate else _PATHS_ONLY
    command = setup + 'exec "$0/bin/python3" -I -B -c "$1" "$2"'
    work = tempfile.mkdtemp(prefix="tritonpy-inenv-")
    try:
        done = subprocess.run(
            ["bash", "-c", command, str(root), _SCRIPT, json.dumps(arguments)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=_clean_env(work),
            cwd=work,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvStartError(f"cannot run the python of {environment or root}: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    if not lines:
        raise EnvStartError(
            f"the python of the environment {environment or root} does not start (exit "
            f"{done.returncode}): {(done.stderr or done.stdout).strip()[-600:]}"
        )
    data: Dict[str, Any] = json.loads(lines[-1][len(_MARK) :])
    return EnvImport(
        environment=environment or root,
        root=root,
        python=str(data["python"]),
        missing=data["missing"],
        error=str(data["error"]),
        defined=bool(data["defined"]),
        is_tritonpy=bool(data["tritonpy"]),
        class_name=str(data["name"]),
        declared=data["declared"],
        decoupled=data["decoupled"],
        cpu_only=bool(data["cpu_only"]),
        tritonpy_version=str(data["tritonpy_version"]),
        details=data,
    )


def import_in_environment(
    environment: Path,
    model_file: Path,
    *,
    cache: Optional[Path] = None,
    timeout: float = 300.0,
    sources_activate: bool = True,
) -> EnvImport:
    """Import ``model_file`` inside ``environment`` (an archive, unpacked once into the cache,
    or a directory), its python started as :func:`import_in_root` says. Raises
    :class:`ArchiveError` for an archive that cannot be unpacked and :class:`EnvStartError`
    when the environment's python does not start."""
    run = functools.partial(
        import_in_root, environment=environment, timeout=timeout, sources_activate=sources_activate
    )
    if environment.is_dir():
        return run(environment, model_file)
    return run(unpacked_environment(environment, cache), model_file, remember=True)
