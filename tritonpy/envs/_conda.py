"""The conda builder: conda, mamba or micromamba creates the environment, pip adds the spec's
pip lines and the tritonpy runtime, conda-pack's Python API writes the archive.

Example::

    tool = find_conda()                        # /opt/conda/bin/mamba
    build_conda_env(spec, "3.10", Path("/tmp/env"), tool=tool, extra=["numpy<2"],
                    reporter=Reporter())
    conda_pack_archive(Path("/tmp/env"), Path("model/.env.partial"), reporter=Reporter())
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from .._tooling.errors import EnvError
from .._tooling.progress import Reporter, run_command, step
from ._local import install_requirements
from ._spec import EnvSpec, conda_package_name

#: the conda front-ends tried, in order of preference
CONDA_TOOLS = ("mamba", "micromamba", "conda")

PackFunction = Callable[..., Any]


def find_conda(explicit: Optional[str] = None) -> Optional[Path]:
    """The conda front-end to use: ``explicit`` (a name or a path), else the first of
    :data:`CONDA_TOOLS` on PATH, else ``$MAMBA_EXE`` / ``$CONDA_EXE``; None when there is none.

    Example::

        find_conda()   # PosixPath('/opt/conda/bin/mamba')
    """
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise EnvError(f"--conda-exe {explicit!r} is not an executable on PATH")
        return Path(found)
    for name in CONDA_TOOLS:
        found = shutil.which(name)
        if found:
            return Path(found)
    for variable in ("MAMBA_EXE", "CONDA_EXE"):
        value = os.environ.get(variable)
        if value and os.access(value, os.X_OK):
            return Path(value)
    return None


def conda_create_command(tool: Path, prefix: Path, spec: EnvSpec, xy: str) -> List[str]:
    """The ``create`` command line: Python ``xy``, pip and the spec's conda packages, from the
    spec's channels (conda-forge when it names none).

    >>> conda_create_command(Path("mamba"), Path("/e"), EnvSpec("x", "3.10"), "3.10")
    ['mamba', 'create', '--yes', '--prefix', '/e', '--override-channels', '-c', 'conda-forge', \
'python=3.10', 'pip']
    """
    channels = list(spec.channels) or ["conda-forge"]
    argv = [str(tool), "create", "--yes", "--prefix", str(prefix), "--override-channels"]
    for channel in channels:
        argv += ["-c", channel]
    conda = [c for c in spec.conda if conda_package_name(c) not in ("python", "pip")]
    return [*argv, f"python={xy}", "pip", *conda]


def build_conda_env(
    spec: EnvSpec,
    xy: str,
    prefix: Path,
    *,
    tool: Path,
    extra: Sequence[str],
    reporter: Reporter,
    wheel: Optional[Path] = None,
) -> Path:
    """Create the environment at ``prefix`` with ``tool``, then pip-install the spec's pip
    lines and ``extra`` with the environment's own python, then ``wheel`` (the running
    tritonpy, without dependencies). Returns ``prefix``.

    Example::

        build_conda_env(read_spec("envs/opencv.yml"), "3.10", Path("/tmp/e"),
                        tool=Path("micromamba"), extra=["numpy<2"], reporter=Reporter())
    """
    with step(reporter, f"creating the Python {xy} environment with {tool.name}"):
        run_command(
            conda_create_command(tool, prefix, spec, xy),
            reporter,
            what=f"{tool.name} create",
        )
    python = prefix / "bin" / "python"
    if not python.exists():
        raise EnvError(
            f"{tool.name} create finished but {python} does not exist; is python={xy} "
            f"available from the channels {', '.join(spec.channels) or 'conda-forge'}?"
        )
    install_requirements(
        python, prefix, spec, extra, wheel=wheel, reporter=reporter, where=tool.name
    )
    return prefix


def conda_pack_archive(
    prefix: Path,
    output: Path,
    *,
    reporter: Reporter,
    compress_level: int = 4,
    pack: Optional[PackFunction] = None,
) -> Path:
    """Pack ``prefix`` into the ``.tar.gz`` ``output`` with ``conda_pack.pack`` (or ``pack``,
    a function with the same signature).

    Example::

        conda_pack_archive(Path("/tmp/e"), Path("/tmp/e.tar.gz"), reporter=Reporter())
    """
    if pack is None:
        from .._runtime._optional import optional_import

        conda_pack = optional_import("conda_pack", feature="the conda builder", extra="pack")
        pack = conda_pack.pack
    with step(reporter, "packing with conda-pack"):
        try:
            pack(
                prefix=str(prefix),
                output=str(output),
                format="tar.gz",
                compress_level=compress_level,
                n_threads=-1,
                force=True,
                ignore_missing_files=True,
            )
        except Exception as exc:
            if type(exc).__name__ != "CondaPackException":
                raise
            raise EnvError(f"conda-pack could not pack {prefix}: {exc}") from exc
    return output
