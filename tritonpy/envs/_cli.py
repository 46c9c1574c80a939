"""``tritonpy pack-env``: thin command over :func:`tritonpy.envs.pack_env`; its options are
:class:`~tritonpy.envs.PackOptions`' fields, declared there once.

Progress renders with rich when it is installed (``pip install 'tritonpy[pack]'``), as plain
lines otherwise.

Example::

    tritonpy pack-env model_repository/preprocess --python 3.10 --env envs/opencv.yml
"""

from __future__ import annotations

import argparse

from .._tooling import cli as shared
from .._tooling.cli_options import add_options, options_from
from ._pack import PackOptions, pack_env


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``pack-env`` subcommand on ``subparsers``."""
    summary = "build a per-model environment archive and point EXECUTION_ENV_PATH at it"
    parser = shared.add_command(
        subparsers, "pack-env", cmd_pack_env, help=summary, failures=shared.CHANGES_MODEL_DIR
    )
    shared.add_model_dir(parser, "the model directory (config.pbtxt)")
    add_options(parser, PackOptions)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def cmd_pack_env(args: argparse.Namespace) -> int:
    """Build MODEL_DIR/<name>_py3.X.tar.gz from a conda environment file or requirements file (with
    conda/mamba/micromamba + conda-pack when available, else from a local CPython with a shared
    libpython), verify it unpacked elsewhere, set EXECUTION_ENV_PATH in config.pbtxt, and place a
    matching triton_python_backend_stub when the environment's Python differs from the server's."""
    with shared.ConsoleReporter() as reporter:
        result = pack_env(args.model_dir, options_from(args, PackOptions), reporter=reporter)
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
