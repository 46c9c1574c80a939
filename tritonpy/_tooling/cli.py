"""What every ``tritonpy`` subcommand shares: how a command is declared, the options several
commands take, the one error handler, and the console progress display.

The convention: each package's ``cli.py`` has ``add_parser(subparsers) -> None``, which calls
:func:`add_command` once per command it owns; a command is ``fn(args) -> int`` (the exit
status) over library functions that never print, and its docstring is the description its
``--help`` shows. :func:`add_command` runs every command through :func:`run_command`, which
turns the errors into printed lines and exit statuses:

- :class:`~tritonpy.MissingDependencyError`: one line naming the subcommand and
  the ``pip install`` command, exit 2;
- :class:`UsageError` and the command's ``bad_input`` errors: the message, exit 2;
- any other :class:`~tritonpy.TritonPyError`: the message, then its notes
  (:func:`add_note`), exit ``Failures.status`` (1 unless the command says otherwise);
- Ctrl-C: the command's ``interrupted`` line (``tritonpy: interrupted`` unless it says more),
  exit 130, no traceback.

Example::

    def add_parser(subparsers: Subparsers) -> None:
        parser = add_command(subparsers, "probe", cmd_probe, help="send each model ...")
        add_server_address(parser, default_url="localhost:8000", bare_protocol="http")
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Literal, Optional, Tuple, Type, get_args

from .._runtime.errors import MissingDependencyError, ToolError, TritonPyError
from .progress import Reporter

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time; annotations only need the name
    Subparsers = argparse._SubParsersAction

#: where options are declared: a parser or one of its (mutually exclusive) groups
Options = argparse._ActionsContainer

#: a subcommand: parsed options in, exit status out
Command = Callable[[argparse.Namespace], int]

#: the protocols a server address may name (``--protocol``)
ProtocolName = Literal["grpc", "http"]
PROTOCOLS: Tuple[ProtocolName, ...] = get_args(ProtocolName)

ERROR_PREFIX = "tritonpy: error: "


class UsageError(ToolError):
    """The options make no sense together (exit status 2, as argparse's own usage errors)."""


@dataclass(frozen=True)
class Failures:
    """How one command reports what stopped it.

    ``prefix`` starts its error lines; ``status`` is the exit status of an error;
    ``bad_input`` are the error types that mean the user's options or inputs were wrong (exit
    2); ``bare`` are printed without the prefix (a server's own ``[CODE] message``);
    ``interrupted`` is the line printed on Ctrl-C (exit 130), formatted with the parsed
    options (``"tritonpy: interrupted; {model_dir} left as it was"``); empty lets Ctrl-C through.
    """

    prefix: str = ERROR_PREFIX
    status: int = 1
    bad_input: Tuple[Type[TritonPyError], ...] = ()
    bare: Tuple[Type[TritonPyError], ...] = ()
    interrupted: str = "tritonpy: interrupted"


#: the failures of a command that changes MODEL_DIR all at once (pack-env, stub): Ctrl-C
#: leaves it as it was
CHANGES_MODEL_DIR = Failures(interrupted="tritonpy: interrupted; {model_dir} left as it was")


def print_error(message: str, prefix: str = ERROR_PREFIX) -> None:
    """Print one error line (or a multi-line message) on stderr after ``prefix``."""
    print(f"{prefix}{message}", file=sys.stderr, flush=True)


def add_note(error: BaseException, note: str) -> None:
    """Attach a line the error handler prints after the message (``BaseException.add_note`` of
    Python 3.11, on every Python tritonpy supports)."""
    if sys.version_info >= (3, 11):
        error.add_note(note)
    else:
        error.__notes__ = [*getattr(error, "__notes__", ()), note]  # type: ignore[attr-defined]


def options(args: argparse.Namespace, names: str) -> Dict[str, Any]:
    """The parsed options ``names`` (their ``dest``, separated by spaces, as namedtuple's field
    names) as keyword arguments: each option is named after the library parameter it sets.

    Example::

        probe(args.url, **options(args, "timeout protocol repository"))
    """
    return {name: getattr(args, name) for name in names.split()}


def run_command(
    command: Command, args: argparse.Namespace, *, name: str, failures: Failures = Failures()
) -> int:
    """Run ``command(args)`` and return its exit status, printing its errors (see the module's
    docstring for the statuses); ``name`` is the subcommand (``"pack-env"``)."""
    try:
        return command(args)
    except MissingDependencyError as exc:
        # one line naming the subcommand and the pip command, no traceback; 2 like a usage error
        print_error(str(exc.for_feature(f"tritonpy {name}")))
        return 2
    except TritonPyError as exc:
        print_error(str(exc), "" if isinstance(exc, failures.bare) else failures.prefix)
        for note in getattr(exc, "__notes__", ()):
            print_error(note, failures.prefix)
        return 2 if isinstance(exc, (UsageError, *failures.bad_input)) else failures.status
    except KeyboardInterrupt:
        if not failures.interrupted:
            raise
        print(failures.interrupted.format(**vars(args)), file=sys.stderr, flush=True)
        return 130


def add_command(
    subparsers: Subparsers,
    name: str,
    command: Command,
    *,
    help: str,
    failures: Failures = Failures(),
    description: Optional[str] = None,
) -> argparse.ArgumentParser:
    """Declare subcommand ``name`` running ``command`` through :func:`run_command`; return its
    parser for the command's own options. ``help`` is its line in ``tritonpy --help``;
    ``command``'s docstring is the description ``tritonpy NAME --help`` shows (one text for
    the user and the reader of the code) unless ``description`` is given."""
    # under python -OO docstrings are gone: the summary line stands in
    description = description or inspect.getdoc(command) or help
    parser = subparsers.add_parser(name, help=help, description=description)

    def handled(args: argparse.Namespace) -> int:
        return run_command(command, args, name=name, failures=failures)

    parser.set_defaults(func=handled)
    return parser


# ------------------------------------------------------------------ options several commands take
def add_model_dir(parser: Options, help: str = "the model directory") -> None:
    """The positional ``MODEL_DIR`` (``args.model_dir``)."""
    parser.add_argument("model_dir", metavar="MODEL_DIR", help=help)


def add_repository(parser: Options, help: str = "the model repository directory") -> None:
    """The positional ``REPO`` (``args.repository``)."""
    parser.add_argument("repository", metavar="REPO", help=help)


def add_server_address(parser: Options, *, default_url: str, bare_protocol: str) -> None:
    """``--url`` and ``--protocol`` of a command that talks to a running server;
    ``bare_protocol`` is what a ``host:port`` without ``--protocol`` means to it."""
    parser.add_argument(
        "--url",
        default=default_url,
        help=f"server address: host:port ({bare_protocol} unless --protocol says otherwise), "
        f"http://host:port or grpc://host:port (default {default_url})",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help=f"protocol of a host:port --url (default {bare_protocol})",
    )


def add_timeout(parser: Options, default: float, what: str) -> None:
    """``--timeout SECONDS`` (``args.timeout``); ``what`` says what it limits."""
    parser.add_argument(
        "--timeout", type=float, default=default, help=f"{what} in seconds (default {default:g})"
    )


def add_triton_version(
    parser: Options, *, help: str, required: bool = False, default: Optional[str] = None
) -> None:
    """``--triton-version YY.MM`` on ``parser`` (or on a mutually exclusive group)."""
    parser.add_argument(
        "--triton-version", metavar="YY.MM", required=required, default=default, help=help
    )


def add_python(parser: Options, help: str, metavar: str = "X.Y") -> None:
    """``--python`` (``args.python``): the environment's Python version or interpreter."""
    parser.add_argument("--python", metavar=metavar, default=None, help=help)


def add_server_python(parser: Options, help: str) -> None:
    """``--server-python X.Y`` on ``parser`` (or on a mutually exclusive group)."""
    parser.add_argument("--server-python", metavar="X.Y", default=None, help=help)


def add_force(parser: Options, help: str) -> None:
    """``--force`` (``args.force``)."""
    parser.add_argument("--force", action="store_true", help=help)


# -------------------------------------------------------------------------- progress display
class ConsoleReporter(Reporter):
    """Renders progress on stderr: a rich spinner with the running step and its last output
    line, a check mark per finished step; plain lines without rich (``pip install
    'tritonpy[pack]'`` brings it). Use it as a context manager: leaving stops the spinner.

    Example::

        with ConsoleReporter() as reporter:
            pack_env("model_repository/preprocess", reporter=reporter)
    """

    def __init__(self) -> None:
        self._status: Any = None
        self._title = ""
        self._last = 0.0
        try:  # rich is optional here: without it the progress prints as plain lines
            from rich.console import Console
        except ImportError:
            self._console: Any = None
        else:
            self._console = Console(stderr=True, highlight=False)

    def __enter__(self) -> ConsoleReporter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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
        self._show(f"ok  {step}{suffix}", "[green]✓[/green] {}[dim]{}[/dim]", step, suffix)

    def note(self, message: str) -> None:
        self._show(f"  - {message}", "  [cyan]•[/cyan] {}", message)

    def close(self) -> None:
        """Stop a running spinner (after an error or Ctrl-C)."""
        self._stop()

    def _show(self, plain: str, markup: str, *texts: str) -> None:
        """Print ``plain`` without rich, else ``markup`` filled with the escaped ``texts``."""
        if self._console is None:
            print(plain, file=sys.stderr, flush=True)
            return
        from rich.markup import escape

        self._console.print(markup.format(*(escape(text) for text in texts)))

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
