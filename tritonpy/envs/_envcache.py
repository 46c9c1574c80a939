"""A cache of built environments, shared by every model of the same spec: what
``tritonpy export`` (and ``tritonpy check --build-envs``) build is kept, so a second run after a
fix takes seconds, and ten models of one spec build one environment.

An entry lives in ``<cache>/envs/built/<key>/env_pyX.Y.tar.gz``; the key hashes the spec's
contents (with every file it includes through ``-r``/``-c``, recursively), the Python X.Y, the
target release, the builder, the running tritonpy (its wheel's digest) and the requirements
pack-env adds for the model's codecs. The archive is built by :func:`tritonpy.envs.pack_env`
(verification included) in a scratch copy of the first model that needs it, and moved into
place once complete.

Example::

    plan = plan_environment(Path("repo/m0"), triton_version="24.10", builder="local")
    found = cached_environment(plan)             # None until built
    built = build_environment(plan, reporter)    # or found in the cache: seconds
    built.archive      # .../envs/built/1f2e.../env_py3.10.tar.gz
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Set

from .._tooling.env_archives import archive_name, build_key
from .._tooling.installation import cache_directory
from .._tooling.progress import Reporter
from .._tooling.releases import TritonRelease
from ._conda import find_conda
from ._needs import plan_additions, scan_model
from ._pack import Builder, find_default_spec, pack_env
from ._selfwheel import running_tritonpy
from ._spec import EnvSpec, read_spec

_INCLUDE = re.compile(r"(?:^|\s)(?:-r|-c|--requirement|--constraint)(?:\s+|=)(\S+)")
_DONE = "entry.json"  # written last: a folder without it holds no finished build
_STEM = "env"
_SKIPPED = {"__pycache__", "tests", "test"}


def spec_digest(path: Optional[Path]) -> str:
    """The SHA-256 of a spec file with every requirement file it includes (``-r``/``-c``,
    relative to the including file), recursively; a missing include counts by its name.

    >>> len(spec_digest(None))
    64
    """
    digest = hashlib.sha256()
    seen: Set[Path] = set()

    def add(file: Path) -> None:
        resolved = file.resolve()
        if resolved in seen:
            return
        seen.add(resolved)
        try:
            data = file.read_bytes()
        except OSError:
            digest.update(f"missing:{file}\0".encode())
            return
        digest.update(f"{file.name}\0".encode() + data + b"\0")
        for match in _INCLUDE.finditer(data.decode("utf-8", "replace")):
            target = Path(match.group(1))
            add(target if target.is_absolute() else file.parent / target)

    if path is not None:
        add(path)
    return digest.hexdigest()


@dataclass(frozen=True)
class EnvPlan:
    """What a model's environment would be built from: its ``spec`` file (None: numpy and
    tritonpy alone), Python ``xy``, ``release``, the resolved ``builder`` (``"local"`` or
    ``"conda"``), the requirements ``added`` for its codecs, and the cache ``key``."""

    model_dir: Path
    spec: Optional[Path]
    xy: str
    release: TritonRelease
    builder: str
    added: List[str]
    key: str

    @property
    def folder(self) -> Path:
        return cache_directory() / "envs" / "built" / self.key[:32]

    @property
    def archive(self) -> Path:
        return self.folder / archive_name(_STEM, self.xy)

    @property
    def label(self) -> str:
        """How messages name the environment: its spec (or 'numpy + tritonpy')."""
        return str(self.spec) if self.spec else "numpy + tritonpy (no spec)"


@dataclass
class BuiltEnv:
    """A built environment of the cache: the ``archive``, its Python, whether it was ``built``
    by this call (False: found in the cache) and the seconds it took."""

    plan: EnvPlan
    archive: Path
    python: str
    built: bool
    seconds: float = 0.0
    models: List[str] = field(default_factory=list)


def _resolved_builder(builder: Builder) -> str:
    if builder == "local":
        return "local"
    return "conda" if find_conda(None) is not None or builder == "conda" else "local"


def plan_environment(model_dir: Path, *, triton_version: str, builder: Builder = "auto") -> EnvPlan:
    """The build plan (and cache key) of ``model_dir``'s environment: the directory's
    ``environment.yml``/``requirements.txt`` (else none), its Python pin (else the release's
    container Python). Raises :class:`~tritonpy.envs.SpecError` for an unreadable spec."""
    release = TritonRelease.parse(triton_version)
    spec = find_default_spec(model_dir)
    env_spec = read_spec(spec) if spec else EnvSpec(None, None)
    xy = env_spec.python or release.python
    additions = [a.requirement for a in plan_additions(env_spec, scan_model(model_dir))]
    resolved = _resolved_builder(builder)
    key = build_key(
        {
            "spec": spec_digest(spec.absolute() if spec else None),
            "python": xy,
            "release": release.name,
            "builder": resolved,
            "tritonpy": running_tritonpy().digest,
            "added": additions,
        }
    )
    return EnvPlan(
        model_dir, spec.absolute() if spec else None, xy, release, resolved, additions, key
    )


def cached_environment(plan: EnvPlan) -> Optional[BuiltEnv]:
    """The finished build of ``plan`` in the cache, or None."""
    if (plan.folder / _DONE).is_file() and plan.archive.is_file():
        return BuiltEnv(plan, plan.archive, plan.xy, built=False)
    return None


def _ignored(directory: str, names: List[str]) -> Set[str]:
    return {
        n
        for n in names
        if n in _SKIPPED
        or n.startswith(".")
        or n.endswith((".tar.gz", ".pyc"))
        or n == "triton_python_backend_stub"
    }


class _ScratchReporter(Reporter):
    """Forwards pack-env's progress, without its notes about the scratch copy's config.pbtxt
    (the user's models get their EXECUTION_ENV_PATH from the export)."""

    def __init__(self, target: Reporter) -> None:
        self.target = target

    def start(self, step: str) -> None:
        self.target.start(step)

    def update(self, line: str) -> None:
        self.target.update(line)

    def done(self, step: str, detail: str = "") -> None:
        self.target.done(step, detail)

    def note(self, message: str) -> None:
        if not message.startswith("config.pbtxt:"):
            self.target.note(message)


def build_environment(plan: EnvPlan, reporter: Optional[Reporter] = None) -> BuiltEnv:
    """The environment of ``plan``: from the cache, else built now with
    :func:`~tritonpy.envs.pack_env` in a scratch copy of ``plan.model_dir`` (whose ``model.py``
    pack-env's verification imports inside it) and moved into the cache. Raises pack-env's
    errors (:class:`~tritonpy.envs.EnvError`, :class:`~tritonpy.envs.ArchiveError`, ...)."""
    found = cached_environment(plan)
    if found is not None:
        return found
    began = time.monotonic()
    reporter = reporter or Reporter()
    plan.folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{plan.key[:12]}-", dir=plan.folder.parent))
    try:
        scratch = work / plan.model_dir.name
        shutil.copytree(plan.model_dir, scratch, ignore=_ignored)
        (scratch / "config.pbtxt").write_text(
            f'name: "{plan.model_dir.name}"\nbackend: "python"\n', encoding="utf-8"
        )
        builder: Builder = "local" if plan.builder == "local" else "conda"
        result = pack_env(
            scratch,
            spec=str(plan.spec) if plan.spec else None,
            python=plan.xy,
            triton_version=plan.release.name,
            builder=builder,
            name=_STEM,
            stub="never",
            reporter=_ScratchReporter(reporter),
        )
        finished = work / "entry"
        finished.mkdir()
        os.replace(result.archive, finished / plan.archive.name)
        details = {
            "spec": str(plan.spec) if plan.spec else None,
            "python": result.python,
            "release": plan.release.name,
            "builder": result.builder,
            "added": plan.added,
            "size": (finished / plan.archive.name).stat().st_size,
        }
        (finished / _DONE).write_text(json.dumps(details, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(plan.folder, ignore_errors=True)  # an unfinished earlier attempt
        os.replace(finished, plan.folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return BuiltEnv(plan, plan.archive, plan.xy, built=True, seconds=time.monotonic() - began)
