"""How :func:`~tritonpy.envs.pack_env` builds: :class:`PackOptions`, each option declared once
with the flag and help of ``tritonpy pack-env``, and the closed sets of its builder and stub
choices.

Example::

    pack_env("model_repository/preprocess", PackOptions(python="3.10", builder="local"))
"""

from __future__ import annotations

import os  # noqa: F401  (PathLike's "os.PathLike[str]" resolves in this module's names)
from dataclasses import dataclass
from typing import Literal, Optional, Tuple, get_args

from .._tooling.options import Flag, library_only, option
from .._tooling.releases import BUNDLED_RELEASE
from ._conda import PackFunction
from ._spec import PathLike

#: ``"conda"``: conda/mamba/micromamba + conda-pack; ``"local"``: a local CPython with a shared
#: libpython; ``"auto"``: conda when one is on PATH (and no ``python_path``), else local
Builder = Literal["auto", "local", "conda"]
#: ``"auto"``: a stub when the environment's Python differs from the server's
StubMode = Literal["auto", "always", "never"]
BUILDERS: Tuple[Builder, ...] = get_args(Builder)
STUB_MODES: Tuple[StubMode, ...] = get_args(StubMode)


@dataclass(frozen=True)
class PackOptions:
    """How :func:`pack_env` builds: each field is declared once, with the help and flag of
    ``tritonpy pack-env`` (``tritonpy pack-env --help`` lists them), so the library's and the
    command's defaults are one. Beyond the help texts:

    - ``spec``: default: the model directory's ``environment.yml`` or ``requirements.txt``;
      none: numpy and tritonpy only;
    - ``python``: default: the spec's pin, else the release's container Python;
    - ``builder``: see :data:`Builder`; ``stub``: see :data:`StubMode`;
    - ``force``: rebuild even when spec, additions, Python, release and tritonpy are unchanged;
    - ``conda_pack_function``: a replacement for ``conda_pack.pack`` (tests; no flag).

    Example::

        pack_env("model_repository/preprocess", PackOptions(python="3.10", builder="local"))
    """

    spec: Optional[PathLike] = option(
        None,
        flags=["--env"],
        metavar="FILE|NAME",
        help="conda environment file, or the name of a spec shipped with tritonpy "
        "(numpy, opencv, torch-cpu)",
        alternatives=(
            Flag(
                ("--requirements",),
                "requirements file (nested -r/-c files are followed: their changes rebuild)",
                "FILE",
            ),
        ),
    )
    python: Optional[str] = option(None, metavar="X.Y", help="Python of the environment")
    python_path: Optional[PathLike] = option(
        None, metavar="PATH", help="local interpreter to copy (local)"
    )
    triton_version: str = option(
        BUNDLED_RELEASE, metavar="YY.MM", help="target Triton release (default {default})"
    )
    builder: Builder = option("auto", help="default: {default}")
    conda_exe: Optional[str] = option(None, metavar="NAME", help="conda front-end (conda builder)")
    name: Optional[str] = option(
        None, help="archive name stem (default: spec name or directory name)"
    )
    force: bool = option(False, help="rebuild even if unchanged")
    stub: StubMode = option(
        "auto", help="place a stub: auto (when the Pythons differ), always, never"
    )
    server_python: Optional[str] = option(
        None,
        metavar="X.Y",
        help="Python of the serving stub (default: the release's container Python; "
        "3.11 for `tritonpy serve` on this machine's venv)",
    )
    tritonpy_requirement: Optional[str] = option(
        None,
        flags=["--tritonpy"],
        metavar="REQ",
        help="tritonpy requirement to install instead of the running tritonpy (default: a "
        "wheel built from the running tritonpy's own files, same version, no index lookup)",
    )
    compress_level: int = option(
        4, choices=range(0, 10), metavar="0-9", help="gzip level (default {default})"
    )
    skip_import_check: Tuple[str, ...] = option(
        (),
        metavar="DIST",
        help="do not import the modules of distribution DIST during verification (repeatable; "
        "for a distribution whose metadata names no importable module)",
    )
    conda_pack_function: Optional[PackFunction] = library_only(None)
