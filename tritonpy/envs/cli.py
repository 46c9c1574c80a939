"""``tritonpy pack-env``: thin command over :func:`tritonpy.envs.pack_env`.

Wire it into the main parser with ``add_parser(subparsers)``; progress renders with rich when
it is installed (``pip install 'tritonpy[pack]'``), as plain lines otherwise.

Example::

    tritonpy pack-env model_repository/preprocess --python 3.10 --env envs/opencv.yml
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Optional

from .._runtime.errors import MissingDependencyError, TritonPyError
from .._tooling.progress import Reporter
from .._tooling.releases import BUNDLED_RELEASE
from .pack import BUILDERS, STUB_MODES, pack_env

__all__ = ["ConsoleReporter", "add_parser", "cmd_pack_env"]


class ConsoleReporter(Reporter):
    """Renders progress on stderr: a rich spinner with the running step and its last output
    line, a check mark per finished step; plain lines without rich."""

    def __init__(self) -> None:
        self._status: Any = None
        self._title = ""
        self._last = 0.0
        try:
            from rich.console import Console
        except ImportError:
            self._console: Any = None
        else:
            self._console = Console(stderr=True, highlight=False)

    def start(self, step: str) -> None:
        self._title = step
        if self._console is None:
            print(f"... {step}", file=sys.stderr, flush=True)
            return
        self._stop()
        self._status = self._console.status(f"[bold]{step}[/bold]")
        self._status.start()

    def update(self, line: str) -> None:
        now = time.monotonic()
        if self._status is None or now - self._last < 0.1 or not line.strip():
            return
        self._last = now
        from rich.markup import escape

        shown = escape(line.strip()[:100])
        self._status.update(f"[bold]{escape(self._title)}[/bold]\n  [dim]{shown}[/dim]")

    def done(self, step: str, detail: str = "") -> None:
        self._stop()
        suffix = f" ({detail})" if detail else ""
        if self._console is None:
            print(f"ok  {step}{suffix}", file=sys.stderr, flush=True)
        else:
            from rich.markup import escape

            self._console.print(f"[green]✓[/green] {escape(step)}[dim]{escape(suffix)}[/dim]")

    def note(self, message: str) -> None:
        if self._console is None:
            print(f"  - {message}", file=sys.stderr, flush=True)
        else:
            from rich.markup import escape

            self._console.print(f"  [cyan]•[/cyan] {escape(message)}")

    def close(self) -> None:
        """Stop a running spinner (after an error or Ctrl-C)."""
        self._stop()

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``pack-env`` to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "pack-env",
        help="build a per-model environment archive and point EXECUTION_ENV_PATH at it",
        description="Build MODEL_DIR/<name>_py3.X.tar.gz from a conda environment file or "
        "requirements file (with conda/mamba/micromamba + conda-pack when available, else from a "
        "local CPython with a shared libpython), verify it unpacked elsewhere, set "
        "EXECUTION_ENV_PATH in config.pbtxt, and place a matching triton_python_backend_stub "
        "when the environment's Python differs from the server's.",
    )
    p.add_argument("model_dir", metavar="MODEL_DIR", help="the model directory (config.pbtxt)")
    spec = p.add_mutually_exclusive_group()
    spec.add_argument(
        "--env",
        dest="spec",
        metavar="FILE|NAME",
        help="conda environment file, or the name of a spec shipped with tritonpy "
        "(numpy, opencv, torch-cpu)",
    )
    spec.add_argument("--requirements", dest="spec", metavar="FILE", help="requirements file")
    p.add_argument("--python", metavar="X.Y", help="Python of the environment")
    p.add_argument("--python-path", metavar="PATH", help="local interpreter to copy (local)")
    p.add_argument(
        "--triton-version",
        default=BUNDLED_RELEASE,
        metavar="YY.MM",
        help=f"target Triton release (default {BUNDLED_RELEASE})",
    )
    p.add_argument("--builder", choices=BUILDERS, default="auto", help="default: auto")
    p.add_argument("--conda-exe", metavar="NAME", help="conda front-end (conda builder)")
    p.add_argument("--name", help="archive name stem (default: spec name or directory name)")
    p.add_argument("--force", action="store_true", help="rebuild even if unchanged")
    p.add_argument(
        "--stub",
        choices=STUB_MODES,
        default="auto",
        help="place a stub: auto (when the Pythons differ), always, never",
    )
    p.add_argument(
        "--server-python",
        metavar="X.Y",
        help="Python of the serving stub (default: the release's container Python; "
        "3.11 for `tritonpy serve` on this machine's venv)",
    )
    p.add_argument(
        "--tritonpy",
        dest="tritonpy_requirement",
        metavar="REQ",
        help="tritonpy requirement to install instead of the running tritonpy (default: a "
        "wheel built from the running tritonpy's own files, same version, no index lookup)",
    )
    p.add_argument(
        "--compress-level",
        type=int,
        default=4,
        choices=range(0, 10),
        metavar="0-9",
        help="gzip level (default 4)",
    )
    p.set_defaults(func=cmd_pack_env)
    return p


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def cmd_pack_env(args: argparse.Namespace, reporter: Optional[ConsoleReporter] = None) -> int:
    """Run ``pack-env``; return the exit status (0 ok, 1 error, 130 interrupted)."""
    reporter = reporter or ConsoleReporter()
    try:
        result = pack_env(
            args.model_dir,
            spec=args.spec,
            python=args.python,
            python_path=args.python_path,
            triton_version=args.triton_version,
            builder=args.builder,
            name=args.name,
            force=args.force,
            stub=args.stub,
            server_python=args.server_python,
            conda_exe=args.conda_exe,
            tritonpy_requirement=args.tritonpy_requirement,
            compress_level=args.compress_level,
            reporter=reporter,
        )
    except KeyboardInterrupt:
        reporter.close()
        print(f"tritonpy: interrupted; {args.model_dir} left as it was", file=sys.stderr)
        return 130
    except MissingDependencyError:
        reporter.close()
        raise  # tritonpy.cli.main prints it as one line, exit 2
    except TritonPyError as exc:
        reporter.close()
        print(f"tritonpy: error: {exc}", file=sys.stderr)
        return 1
    state = "unchanged" if result.skipped else f"built with {result.builder}"
    stub = f", stub from {result.stub.source}" if result.stub is not None else ""
    print(
        f"{result.archive} ({_size(result.size)}, Python {result.python}, {state}{stub}) "
        f"in {result.seconds:.1f} s",
        flush=True,
    )
    return 0
