"""``tritonpy pack-env``: thin command over :func:`tritonpy.envs.pack_env`.

Progress renders with rich when it is installed (``pip install 'tritonpy[pack]'``), as plain
lines otherwise.

Example::

    tritonpy pack-env model_repository/preprocess --python 3.10 --env envs/opencv.yml
"""

from __future__ import annotations

import argparse

from .._tooling import cli as shared
from .._tooling.releases import BUNDLED_RELEASE
from ._pack import BUILDERS, STUB_MODES, pack_env


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``pack-env`` subcommand on ``subparsers``."""
    summary = "build a per-model environment archive and point EXECUTION_ENV_PATH at it"
    parser = shared.add_command(
        subparsers, "pack-env", cmd_pack_env, help=summary, failures=shared.CHANGES_MODEL_DIR
    )
    shared.add_model_dir(parser, "the model directory (config.pbtxt)")
    _add_spec(parser)
    shared.add_python(parser, "Python of the environment")
    parser.add_argument("--python-path", metavar="PATH", help="local interpreter to copy (local)")
    shared.add_triton_version(
        parser, default=BUNDLED_RELEASE, help=f"target Triton release (default {BUNDLED_RELEASE})"
    )
    add_builder(parser, "default: auto")
    parser.add_argument("--conda-exe", metavar="NAME", help="conda front-end (conda builder)")
    parser.add_argument("--name", help="archive name stem (default: spec name or directory name)")
    shared.add_force(parser, "rebuild even if unchanged")
    _add_packing(parser)
    parser.add_argument(
        "--skip-import-check",
        dest="skip_import_check",
        action="append",
        default=[],
        metavar="DIST",
        help="do not import the modules of distribution DIST during verification (repeatable; "
        "for a distribution whose metadata names no importable module)",
    )


def add_builder(parser: argparse.ArgumentParser, help: str) -> None:
    """``--builder`` (``args.builder``): how an environment is built (also ``tritonpy export``)."""
    parser.add_argument("--builder", choices=BUILDERS, default="auto", help=help)


def _add_spec(parser: argparse.ArgumentParser) -> None:
    spec = parser.add_mutually_exclusive_group()
    spec.add_argument(
        "--env",
        dest="spec",
        metavar="FILE|NAME",
        help="conda environment file, or the name of a spec shipped with tritonpy "
        "(numpy, opencv, torch-cpu)",
    )
    spec.add_argument(
        "--requirements",
        dest="spec",
        metavar="FILE",
        help="requirements file (nested -r/-c files are followed: their changes rebuild)",
    )


def _add_packing(parser: argparse.ArgumentParser) -> None:
    """The options of what goes beside the environment: the stub, tritonpy, compression."""
    parser.add_argument(
        "--stub",
        choices=STUB_MODES,
        default="auto",
        help="place a stub: auto (when the Pythons differ), always, never",
    )
    shared.add_server_python(
        parser,
        "Python of the serving stub (default: the release's container Python; "
        "3.11 for `tritonpy serve` on this machine's venv)",
    )
    parser.add_argument(
        "--tritonpy",
        dest="tritonpy_requirement",
        metavar="REQ",
        help="tritonpy requirement to install instead of the running tritonpy (default: a "
        "wheel built from the running tritonpy's own files, same version, no index lookup)",
    )
    parser.add_argument(
        "--compress-level",
        type=int,
        default=4,
        choices=range(0, 10),
        metavar="0-9",
        help="gzip level (default 4)",
    )


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def cmd_pack_env(args: argparse.Namespace) -> int:
    """Build MODEL_DIR/<name>_py3.X.tar.gz from a conda environment file or requirements file (with
    conda/mamba/micromamba + conda-pack when available, else from a local CPython with a shared
    libpython), verify it unpacked elsewhere, set EXECUTION_ENV_PATH in config.pbtxt, and place a
    matching triton_python_backend_stub when the environment's Python differs from the server's."""
    with shared.ConsoleReporter() as reporter:
        result = pack_env(
            args.model_dir,
            reporter=reporter,
            **shared.options(
                args,
                "spec python python_path triton_version builder name force stub server_python "
                "conda_exe tritonpy_requirement compress_level",
            ),
            skip_import_check=tuple(args.skip_import_check),
        )
    for warning in result.verify.warnings if result.verify else []:
        shared.print_error(warning, "tritonpy: warning: ")
    state = "unchanged" if result.skipped else f"built with {result.builder}"
    stub = f", stub from {result.stub.source}" if result.stub is not None else ""
    print(
        f"{result.archive} ({_size(result.size)}, Python {result.python}, {state}{stub}) "
        f"in {result.seconds:.1f} s",
        flush=True,
    )
    return 0
