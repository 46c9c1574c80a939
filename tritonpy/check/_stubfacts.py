"""Stub rules (TP512-TP513): whether the ``triton_python_backend_stub`` beside config.pbtxt can
start with the model's environment, and whether it comes from the server's release.

==========  ========  ==============================================================
TP512       both      the stub needs a libpython (its exact DT_NEEDED name) that neither
                      the environment's ``lib/`` nor the stub's RPATH provides (error;
                      warning for a wheel-grafted name without ``--triton-version``:
                      ``tritonpy serve`` puts the wheel's libraries on the path)
TP513       both      the stub was built from another release than ``--triton-version``
                      (error); ``info`` when the binary does not tell its release
==========  ========  ==============================================================

The stub's Python against the environment's is TP506, numpy 2 on releases before 24.11 is
TP509 (:mod:`tritonpy.check._environments`).
"""

from __future__ import annotations

import re
import tarfile
import zlib
from typing import Iterator, Optional

from .._tooling.elf import ElfDynamic, ElfError, libpython_version, read_dynamic
from .._tooling.env_archives import EnvContents, inspect_env, resolve_env_path
from .._tooling.model_dirs import ENV_PARAMETER, STUB_NAME
from ._context import ModelEntry, Repository, error
from ._report import INFO, WARNING, Finding
from ._stubinfo import library_found, stub_release

_FIELD = f"parameters[{ENV_PARAMETER}]"
# auditwheel renames the libraries it grafts: libpython3-419a3a08.13.so.1.0
_GRAFTED = re.compile(r"-[0-9a-f]{8}\.")


def check_stubs(repo: Repository) -> Iterator[Finding]:
    """Yield the stub findings of every python-backend model with a stub beside config.pbtxt."""
    for entry in repo:
        stub = entry.path / STUB_NAME
        if not entry.is_python or not stub.is_file():
            continue
        try:
            dynamic = read_dynamic(stub)
        except ElfError:
            continue  # TP510 reports an unreadable stub
        needed = dynamic.libpythons
        if not needed:
            continue  # TP510: not a Python backend stub
        python = libpython_version(needed[0]) or ""
        contents = _environment(entry)
        if contents is not None and contents.python == python:
            yield from _libpython(repo, entry, dynamic, needed[0], contents)
        yield from _release(repo, entry, python)


def _environment(entry: ModelEntry) -> Optional[EnvContents]:
    """The environment's contents, or None when there is none or the TP50x rules report it."""
    if ENV_PARAMETER not in entry.config.parameters:
        return None
    place = resolve_env_path(entry.config.parameters[ENV_PARAMETER].string_value, entry.path)
    if (not place.inside_model_dir and place.kind != "absolute") or not place.path.exists():
        return None
    try:
        return inspect_env(place.path)
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return None


def _stub_command(entry: ModelEntry, release: str, python: str, extra: str = "") -> str:
    return f"'tritonpy stub REPO/{entry.name} --triton-version {release} --python {python}{extra}'"


def _libpython(
    repo: Repository, entry: ModelEntry, dynamic: ElfDynamic, soname: str, env: EnvContents
) -> Iterator[Finding]:
    search = [p for p in (dynamic.runpath, dynamic.rpath) if p]
    if library_found(soname, entry.path / STUB_NAME, search, env.libraries):
        return
    python = env.python or ""
    has = [name for name in env.libraries if name.startswith("libpython")]
    release = repo.release.name if repo.release else "YY.MM"
    grafted = bool(_GRAFTED.search(soname))
    raw = entry.config.parameters[ENV_PARAMETER].string_value
    message = (
        f"the stub needs {soname} but neither the environment {raw!r} (its lib/ has "
        f"{', '.join(has) or 'no libpython'}) nor the stub's RPATH provides it; the stub "
        f"cannot start (error while loading shared libraries) and the model never loads"
    )
    if grafted:  # only a stub built against the environment's Python links a plain name
        fix = (
            f"build a stub linking the environment's libpython{python}.so.1.0: "
            f"{_stub_command(entry, release, python, ' --source native')}"
        )
    else:
        fix = (
            f"rebuild the environment so its lib/ holds {soname}: 'tritonpy pack-env "
            f"REPO/{entry.name} --triton-version {release} --python {python}'"
        )
    if grafted and repo.release is None:
        yield entry.finding(
            "TP512",
            WARNING,
            _FIELD,
            message + " (only the nvidia-pytriton wheel's libraries hold it: it loads under "
            "'tritonpy serve', not in a Triton container)",
            fix,
        )
        return
    yield error(entry, "TP512", _FIELD, message, fix)


def _release(repo: Repository, entry: ModelEntry, python: str) -> Iterator[Finding]:
    if repo.release is None:
        return
    target = repo.release.name
    rel = f"{entry.name}/{STUB_NAME}"
    try:
        origin = stub_release(entry.path / STUB_NAME)
    except OSError:
        return
    command = _stub_command(entry, target, python)
    if origin.release is None:
        yield entry.finding(
            "TP513",
            INFO,
            "",
            f"cannot tell which release built the stub ({origin.how}); it must come from the "
            f"server's branch r{target}",
            f"to be sure, rebuild it from r{target}: {command}",
            file=rel,
        )
    elif origin.release != target:
        yield entry.finding(
            "TP513",
            "error",
            "",
            f"the stub is from release {origin.release} ({origin.how}) but the server is "
            f"release {target}; a stub must come from the server's own release branch (it "
            f"shares its IPC structures with that release's libtriton_python.so)",
            f"build or fetch the r{target} stub: {command}",
            file=rel,
        )
