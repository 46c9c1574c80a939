"""What a start tells when models fail to load or the server is not ready in time: the short
form of each failure (:class:`~tritonpy.server.LoadFailure`), :class:`ModelLoadError` and
:class:`ServerTimeoutError`. A base class of :class:`~tritonpy.server.TritonServer`, which
provides the state it reads.

Example::

    server.describe_failure("m", "Internal: NameError: name 'x' is not defined").lines()
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from .._tooling.errors import ModelLoadError, ServerTimeoutError
from .._tooling.options import OptionNames
from ..client import ModelStatus
from ._failures import load_error_message, timeout_message
from ._loadfail import LoadFailure, describe_load_failure
from ._logs import LogFollower, lines_about

FAILURE_GRACE_S = 1.0


class StartReports:
    """The failure reports of :class:`~tritonpy.server.TritonServer` (see its docstring)."""

    model_repository: Path
    python: Optional[str]
    tritonserver: Optional[str]
    startup_timeout: float
    names: OptionNames
    load_failures: List[LoadFailure]
    _log_path: Optional[Path]
    _log_start: int

    # provided by TritonServer
    def _user_text(self, text: str) -> str:
        raise NotImplementedError

    def log_tail(self, n: int = 40) -> str:
        raise NotImplementedError

    def _stop_quietly(self, grace: float) -> None:
        raise NotImplementedError

    def _expected_models(self) -> List[str]:
        raise NotImplementedError

    @property
    def serving_python(self) -> Optional[str]:
        """The interpreter whose stub serves the models (``None`` for another tritonserver
        given without ``python``)."""
        if self.python is not None:
            return self.python
        return None if self.tritonserver is not None else sys.executable

    def describe_failure(self, model: str, text: str) -> LoadFailure:
        """Triton's failure text for ``model`` (a load at startup or through the repository
        API) in its short form, with the user's paths and the fix.

        Example::

            server.describe_failure("m", str(reload_error)).lines()
        """
        return describe_load_failure(
            model, self._user_text(text), repository=self.model_repository,
            python=self.serving_python,
        )  # fmt: skip

    def _settled(self, statuses: List[ModelStatus], follower: LogFollower) -> bool:
        """With ``allow_failures``: every model READY or failed; the failures described."""
        if not statuses or any(m.state not in ("READY", "UNAVAILABLE", "") for m in statuses):
            return False
        failed = sorted(follower.failures)
        self.load_failures = [
            self.describe_failure(n, self._user_text(follower.failures[n])) for n in failed
        ]
        return True

    def _raise_load_error(self, follower: LogFollower) -> None:
        self._stop_quietly(FAILURE_GRACE_S)
        follower.poll()  # failures of other models logged meanwhile
        assert self._log_path is not None
        failures = {name: self._user_text(text) for name, text in sorted(follower.failures.items())}
        about = {
            name: [
                self._user_text(line)
                for line in lines_about(self._log_path, name, start=self._log_start)
            ]
            for name in failures
        }
        tail = self.log_tail(40)
        self.load_failures = [self.describe_failure(n, text) for n, text in failures.items()]
        raise ModelLoadError(
            load_error_message(self.model_repository, self.load_failures, about, tail),
            failures=failures,
            log_tail=tail,
        )

    def _raise_timeout(self, follower: LogFollower, statuses: List[ModelStatus]) -> None:
        if statuses:
            not_ready = sorted({m.name for m in statuses if m.state not in ("READY", "")})
        else:
            expected = set(self._expected_models()) | follower.loading
            not_ready = sorted(expected - follower.loaded)
        self._stop_quietly(FAILURE_GRACE_S)
        tail = self.log_tail(40)
        raise ServerTimeoutError(
            timeout_message(
                self.model_repository, self.startup_timeout, not_ready, tail, self.names
            ),
            not_ready=not_ready,
            log_tail=tail,
        )
