"""Progress reporting for long steps, and running commands whose output feeds it.

Library code never prints: it calls a :class:`Reporter`. The CLI passes one that renders with
rich; tests and other callers pass :class:`Reporter` itself (silent) or a subclass.

Example::

    class Printer(Reporter):
        def done(self, step: str, detail: str = "") -> None:
            print("done:", step, detail)

    pack_env("model_repository/preprocess", reporter=Printer())
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import time
from typing import Deque, Iterator, Mapping, Optional, Sequence, Union

from .._runtime.errors import ToolError


class CommandError(ToolError):
    """A command run by a builder failed; ``output`` holds the last lines it printed."""

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class Reporter:
    """Receives progress events; every method is a no-op here. Subclass to display them."""

    def start(self, step: str) -> None:
        """A long step begins (``"installing numpy<2 with pip"``)."""

    def update(self, line: str) -> None:
        """A line of detail for the running step (a command's output line)."""

    def done(self, step: str, detail: str = "") -> None:
        """The step ended successfully; ``detail`` is a short result ("41 MB, 3.2 s")."""

    def note(self, message: str) -> None:
        """Something the user should read (a choice made, a skipped step, a warning)."""


@contextlib.contextmanager
def step(reporter: Reporter, title: str) -> Iterator[None]:
    """Report ``title`` as started, then as done with its duration when the block succeeds.

    Example::

        with step(reporter, "copying the interpreter"):
            copy_prefix(...)
    """
    began = time.monotonic()
    reporter.start(title)
    yield
    reporter.done(title, f"{time.monotonic() - began:.1f} s")


def run_command(
    argv: Sequence[Union[str, os.PathLike[str]]],
    reporter: Reporter,
    *,
    what: str,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    tail: int = 40,
) -> str:
    """Run ``argv``, stream its output lines to ``reporter.update`` and return the output.

    Raises :class:`CommandError` (with the last ``tail`` lines) when it exits non-zero or cannot
    start; ``what`` names the step in the message. Ctrl-C terminates the command and propagates.

    Example::

        run_command(["python3", "-m", "pip", "install", "numpy<2"], reporter, what="pip install")
    """
    args = [os.fspath(a) for a in argv]
    lines: Deque[str] = collections.deque(maxlen=tail)
    everything = []
    try:
        process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=None if env is None else dict(env),
            cwd=cwd,
        )
    except OSError as exc:
        raise CommandError(f"{what}: cannot run {args[0]!r}: {exc.strerror or exc}") from exc
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip("\n")
            lines.append(line)
            everything.append(line)
            reporter.update(line)
        code = process.wait()
    except BaseException:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise
    if code != 0:
        shown = "\n".join("    " + ln for ln in lines)
        raise CommandError(
            f"{what} failed (exit status {code}): {' '.join(args)}\n{shown}", output=shown
        )
    return "\n".join(everything)
