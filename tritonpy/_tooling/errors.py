"""Errors of the tooling (the embedded server, environments), all under ``ToolError``."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from .._runtime.errors import ToolError


class ServerError(ToolError):
    """tritonserver could not be located, prepared, started, reached or stopped.

    ``log_tail`` holds the last lines of the server log when a server had been started
    (empty otherwise).
    """

    def __init__(self, message: str, *, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class ModelLoadError(ServerError):
    """A model fails to load: in tritonserver (one or more models of the repository), or in
    :class:`tritonpy.testing.ModelHarness`, which loads a model the way Triton would.

    ``failures`` maps each failed model name to the error text Triton reported for it (the
    model's own exception and traceback when it came from ``model.py``); empty when the
    harness raised it (the message says what failed).

    Example::

        try:
            server.start()
        except ModelLoadError as err:
            print(err.failures["preprocess"])   # "SyntaxError: expected ':' (model.py, line 4)"
    """

    def __init__(
        self, message: str, *, failures: Optional[Mapping[str, str]] = None, log_tail: str = ""
    ) -> None:
        super().__init__(message, log_tail=log_tail)
        self.failures = dict(failures or {})


class ServerTimeoutError(ServerError):
    """The server (or some of its models) did not become ready within ``startup_timeout``.

    ``not_ready`` lists the models that were still not ready.
    """

    def __init__(self, message: str, *, not_ready: Sequence[str], log_tail: str = "") -> None:
        super().__init__(message, log_tail=log_tail)
        self.not_ready = list(not_ready)


class EnvError(ToolError):
    """An environment could not be built, packed, verified or placed."""


class SpecError(EnvError):
    """An environment spec (conda environment file, requirements file) is unusable."""


class ArchiveError(EnvError):
    """An environment archive is unsafe or incomplete (absolute or ``..`` member paths, links
    pointing outside, no ``bin/activate``, no ``lib/libpython3.X.so*``)."""
