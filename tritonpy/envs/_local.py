"""The local builder: a relocatable environment from a local CPython with a shared libpython.

The environment directory has the layout conda-pack produces::

    bin/python3.X  bin/python3 -> python3.X  bin/python -> python3.X  bin/activate  bin/pip ...
    lib/libpython3.X.so.1.0  lib/libpython3.X.so -> libpython3.X.so.1.0
    lib/python3.X/            the standard library (no test suites), site-packages
    include/python3.X/        the C headers (to build sdists)

The interpreter's ``RUNPATH`` is rewritten to ``$ORIGIN/../lib`` (when the original is at least
that long) and ``bin/activate`` puts ``<env>/bin`` first on PATH and ``<env>/lib`` on
LD_LIBRARY_PATH, computed from its own location, so the directory works wherever it is unpacked.
Scripts in ``bin/`` get a shebang that finds the interpreter beside them.

Example::

    base = find_interpreter("3.10")
    build_local_env(read_spec("envs/numpy.yml"), base, Path("/tmp/env"), extra=["numpy<2"],
                    wheel=self_wheel(reporter), reporter=reporter)
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

from .._tooling.elf import ElfError, set_runpath
from .._tooling.progress import Reporter, run_command, step
from ._interpreters import BaseInterpreter
from ._spec import EnvSpec, requirement_name

#: bin/activate of a tritonpy environment: POSIX sh, sourced by Triton (``source bin/activate``)
ACTIVATE_SCRIPT = """\
# Activates this relocatable environment (written by tritonpy). Source it:
#   source <env>/bin/activate
if [ -n "${BASH_VERSION:-}" ]; then
    eval '_tritonpy_self="${BASH_SOURCE[0]}"'
elif [ -n "${ZSH_VERSION:-}" ]; then
    eval '_tritonpy_self="${(%):-%x}"'
else
    _tritonpy_self="$0"
fi
TRITONPY_ENV_PREFIX="$(cd "$(dirname "$_tritonpy_self")/.." && pwd)"
export TRITONPY_ENV_PREFIX
export PATH="$TRITONPY_ENV_PREFIX/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$TRITONPY_ENV_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset PYTHONHOME _tritonpy_self
"""

_SHEBANG = """#!/bin/sh
'''exec' "$(dirname -- "$0")/{python}" "$0" "$@"
' '''
"""

_STDLIB_SKIP = {"test", "tests", "idle_test", "idlelib", "turtledemo", "site-packages"}


def _ignore_stdlib(directory: str, names: Sequence[str]) -> set[str]:
    skipped = {n for n in names if n in _STDLIB_SKIP}
    skipped |= {n for n in names if n.endswith((".opt-1.pyc", ".opt-2.pyc", ".a"))}
    return skipped


def clean_environment(prefix: Path) -> Dict[str, str]:
    """The process environment for running the environment's own python during the build."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "CONDA_PREFIX")
        and not k.startswith(("PIP_TARGET", "PIP_PREFIX", "PIP_USER", "PIP_REQUIRE_VIRTUALENV"))
    }
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{prefix / 'lib'}{os.pathsep + old if old else ''}"
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _patch_runpath(path: Path, value: str, reporter: Reporter) -> None:
    try:
        if not set_runpath(path, value):
            reporter.note(
                f"kept the RUNPATH of {path.name} (no room to rewrite it to {value}); "
                "bin/activate puts <env>/lib on LD_LIBRARY_PATH, which takes precedence"
            )
    except ElfError as exc:
        reporter.note(f"could not rewrite the RUNPATH of {path.name}: {exc}")


def copy_interpreter(base: BaseInterpreter, prefix: Path, reporter: Reporter) -> None:
    """Copy ``base`` (binary, libpython, standard library without tests, headers) to
    ``prefix`` and make it relocatable.

    Example::

        copy_interpreter(find_interpreter("3.10"), Path("/tmp/env"), Reporter())
    """
    xy = base.xy
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "lib").mkdir(exist_ok=True)
    binary = prefix / "bin" / f"python{xy}"
    shutil.copy2(base.binary, binary)
    binary.chmod(0o755)
    _patch_runpath(binary, "$ORIGIN/../lib", reporter)
    for alias in ("python3", "python"):
        (prefix / "bin" / alias).symlink_to(f"python{xy}")
    soname = f"libpython{xy}.so.1.0"
    library = prefix / "lib" / soname
    shutil.copy2(base.libpython, library)
    library.chmod(0o755)
    _patch_runpath(library, "$ORIGIN", reporter)
    (prefix / "lib" / f"libpython{xy}.so").symlink_to(soname)
    abi3 = base.libpython.parent / "libpython3.so"
    if abi3.is_file():
        shutil.copy2(abi3, prefix / "lib" / "libpython3.so")
    stdlib = prefix / "lib" / f"python{xy}"
    shutil.copytree(base.stdlib, stdlib, symlinks=True, ignore=_ignore_stdlib)
    (stdlib / "site-packages").mkdir(exist_ok=True)
    if base.include is not None:
        shutil.copytree(base.include, prefix / "include" / base.include.name, symlinks=True)


def write_activate(prefix: Path) -> Path:
    """Write ``bin/activate`` (see :data:`ACTIVATE_SCRIPT`); return its path."""
    path = prefix / "bin" / "activate"
    path.write_text(ACTIVATE_SCRIPT, encoding="utf-8")
    path.chmod(0o644)
    return path


def relocatable_scripts(prefix: Path, xy: str) -> int:
    """Rewrite the shebang of every script in ``bin/`` that names an interpreter inside
    ``prefix``, so it runs the ``python3.X`` beside it wherever the environment lies. Returns
    the number of scripts rewritten."""
    count = 0
    inside = os.fsencode(str(prefix))
    for path in sorted((prefix / "bin").iterdir()):
        if path.is_symlink() or not path.is_file():
            continue
        with open(path, "rb") as stream:
            head = stream.read(2)
            first = head + stream.readline() if head == b"#!" else b""
        if not first.startswith(b"#!" + inside):
            continue
        rest = path.read_bytes()[len(first) :]
        mode = path.stat().st_mode
        path.write_bytes(_SHEBANG.format(python=f"python{xy}").encode() + rest)
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        count += 1
    return count


def install_wheel(
    python: Union[str, os.PathLike[str]], prefix: Path, wheel: Path, reporter: Reporter
) -> None:
    """pip-install ``wheel`` (the running tritonpy) into the environment of ``python``: no
    dependencies (the spec and the runtime requirements brought them), no index.

    Example::

        install_wheel(Path("/tmp/env/bin/python3.10"), Path("/tmp/env"), wheel, reporter)
    """
    with step(reporter, f"installing {wheel.name} (the running tritonpy)"):
        argv = [python, "-m", "pip", "install", "--no-deps", "--no-index"]
        run_command(
            [*argv, "--force-reinstall", "--no-warn-script-location", wheel],
            reporter,
            what="pip install of the running tritonpy",
            env=clean_environment(prefix),
        )


def install_requirements(
    python: Path,
    prefix: Path,
    spec: EnvSpec,
    extra: Sequence[str],
    *,
    wheel: Optional[Path],
    reporter: Reporter,
    where: str,
) -> None:
    """pip-install the spec's pip lines plus ``extra`` with the environment's own ``python``
    (relative ``-r`` paths from the spec's folder), then ``wheel`` (the running tritonpy, no
    dependencies). ``where`` names the environment in errors (``"Python 3.10"``).

    Example::

        install_requirements(Path("/tmp/env/bin/python3.10"), Path("/tmp/env"), spec,
                             ["numpy<2"], wheel=wheel, reporter=reporter, where="Python 3.10")
    """
    requirements = prefix / ".tritonpy-requirements.txt"
    requirements.write_text("\n".join([*spec.pip, *extra]) + "\n", encoding="utf-8")
    named = [*spec.distributions, *(requirement_name(e) for e in extra)]
    if wheel is None:
        named.append("tritonpy")
    shown = ", ".join(dict.fromkeys(n for n in named if n))
    try:
        with step(reporter, f"installing {shown} with pip"):
            run_command(
                [python, "-m", "pip", "install", "--no-warn-script-location", "-r", requirements],
                reporter,
                what=f"pip install into the {where} environment",
                env=clean_environment(prefix),
                cwd=str(spec.source.parent) if spec.source else None,
            )
    finally:
        requirements.unlink()
    if wheel is not None:
        install_wheel(python, prefix, wheel, reporter)


def build_local_env(
    spec: EnvSpec,
    base: BaseInterpreter,
    prefix: Path,
    *,
    extra: Sequence[str],
    reporter: Reporter,
    wheel: Optional[Path] = None,
) -> Path:
    """Build the environment in ``prefix`` (must not exist): copy ``base``, install pip into
    it, pip-install the spec's pip lines plus ``extra`` (the runtime's numpy pin, the codecs'
    packages) with the environment's own python, then ``wheel`` (the running tritonpy, no
    dependencies), write ``bin/activate``. Returns ``prefix``.

    Conda-only packages in the spec are refused (the local builder has no conda).
    """
    if spec.conda:
        from .._tooling.errors import SpecError

        raise SpecError(
            f"the local builder cannot install conda packages {', '.join(spec.conda)} from "
            f"{spec.source}: move them to the '- pip:' section (with their pip names), or "
            "build with conda (--builder conda)"
        )
    python = prefix / "bin" / f"python{base.xy}"
    with step(reporter, f"copying Python {base.version} from {base.prefix}"):
        copy_interpreter(base, prefix, reporter)
    with step(reporter, "installing pip into the environment (ensurepip)"):
        argv = [str(python), "-I", "-m", "ensurepip", "--default-pip"]
        run_command(argv, reporter, what="ensurepip", env=clean_environment(prefix))
    install_requirements(
        python, prefix, spec, extra, wheel=wheel, reporter=reporter, where=f"Python {base.xy}"
    )
    relocatable_scripts(prefix, base.xy)
    write_activate(prefix)
    return prefix
