"""The target release of a harness: its facts, the names it refuses, and the readiness answer
its server gives (``ModelHarness(..., release="26.07")``, ``harness.is_ready()``).

What the harness does per release, from the release's own sources:

- names (python_backend r25.08 ``src/stub_launcher.cc``, ``src/pb_utils.h`` INVALID_CHARS):
  from 25.08 a model name (the auto-complete stub's) or an instance name holding one of
  :data:`~tritonpy._tooling.release_facts.SHELL_CHARACTERS` fails to load with
  ``Invalid stub name: contains invalid characters``. Releases before put the name unquoted
  into a ``bash -c`` command line (measured on 24.10: ``(``, ``;`` and ``"`` leave the stub
  unstarted and the model never ready, ``$b`` expands to nothing and a backslash is dropped
  (the stub finds no model.py), ``#`` inside a name loads), so the harness refuses there the
  characters of :data:`BASH_BREAKING` and warns for the others, which load but not from 25.08.
- ``is_ready()`` (python_backend r26.03 ``src/pb_stub.cc``, ``src/python_be.cc``): the
  server calls the model's optional ``is_ready()`` (sync or async) when asked for the
  model's readiness; ``True`` is ready, ``False`` is not (UNAVAILABLE "Model '<instance>' is
  not ready (user-defined check failed)."), an exception or a non-bool is not ready
  (INTERNAL, the exception's ``Type: message``), no answer within 5 s is not ready
  (UNAVAILABLE). Before 26.03 the server never calls it.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from .._runtime.errors import ToolError
from .._tooling.errors import ModelLoadError
from .._tooling.release_facts import (
    API_IS_READY,
    LAUNCH_BREAKING_CHARACTERS,
    SHELL_CHARACTERS,
    ReleaseFacts,
)
from .._tooling.releases import TritonRelease
from ._errors import HarnessError
from .fake_pb_utils._release import DEFAULT_RELEASE

#: how long the server waits for a model's is_ready() (r26.03 kUserModelReadinessTimeoutMs)
READY_TIMEOUT_S = 5.0
#: the server's text for a stub name holding a shell character (r25.08 stub_launcher.cc)
INVALID_STUB_NAME = "Invalid stub name: contains invalid characters"
#: the characters that break the stub's ``bash -c`` command line before 25.08 (the table's)
BASH_BREAKING = LAUNCH_BREAKING_CHARACTERS
#: where the is_ready() hook comes from
IS_READY_SOURCE = "python_backend@r26.03:src/pb_stub.cc, src/python_be.cc"


class ReleaseSurfaceWarning(UserWarning):
    """A model defines a hook its target release never calls (``is_ready`` before 26.03)."""


def target_facts(release: Optional[str]) -> ReleaseFacts:
    """The facts of ``release`` (None: :data:`DEFAULT_RELEASE`, the bundled server's), or a
    HarnessError for text that is no ``YY.MM``. Outside the table: the nearest known
    release's facts (a newer release warns ``ReleaseOutsideTableWarning``)."""
    text = DEFAULT_RELEASE if release is None else release
    try:
        return TritonRelease.parse(str(text)).facts
    except ToolError as exc:
        raise HarnessError(f"ModelHarness(release={release!r}): {exc}") from None


def _shell_characters(name: str) -> List[str]:
    return sorted(set(name) & SHELL_CHARACTERS)


def check_names(facts: ReleaseFacts, config: Dict[str, Any]) -> None:
    """Refuse a model or instance group name the release's Python backend cannot load (see
    the module's text); warn for one that loads here but not from 25.08."""
    model = str(config.get("name", ""))
    names = [model] + [str(g.get("name", "")) for g in config.get("instance_group", [])]
    for name in names:
        found = _shell_characters(name)
        what = "model name" if name == model else "instance group name"
        breaking = sorted(set(found) & BASH_BREAKING)
        if facts.refuses_shell_names and found:
            raise _name_refused(facts, model, what, name, found, INVALID_STUB_NAME)
        if breaking:
            server = "the stub's bash -c command line breaks on the name"
            raise _name_refused(facts, model, what, name, breaking, server)
        if found:
            warnings.warn(
                f"model {model!r}: {what} {name!r} holds {' '.join(found)}, which Triton "
                f"{facts.release} accepts but 25.08 and later refuse "
                f"({INVALID_STUB_NAME!r}); rename it to serve it on newer releases",
                ReleaseSurfaceWarning,
                stacklevel=4,
            )


def _name_refused(
    facts: ReleaseFacts, model: str, what: str, name: str, found: List[str], server: str
) -> ModelLoadError:
    if facts.refuses_shell_names:
        refused = "".join(sorted(SHELL_CHARACTERS))
        how = f"Triton {facts.release} refuses {what}s holding any of {refused}"
    else:
        how = (
            f"Triton {facts.release} puts the {what} unquoted into a bash -c command line, so "
            f"the model fails to load (how depends on the character), and 25.08 and later "
            f"refuse it"
        )
    return ModelLoadError(
        f"model {model!r} failed to load: {what} {name!r} holds {' '.join(found)}: {how} "
        f"({facts.cites('refuses_shell_names')}); rename it with letters, digits, '_', '-' "
        f"or '.'",
        failures={model: server},
    )


def warn_unused_hooks(facts: ReleaseFacts, model: Any, name: str) -> None:
    """Say that a model's ``is_ready`` will not be called by ``facts.release``."""
    if hasattr(model, "is_ready") and not facts.has_api(API_IS_READY):
        warnings.warn(
            f"model {name!r} defines is_ready(), which Triton {facts.release} never calls "
            f"(the Python backend calls it from 26.03 on, {IS_READY_SOURCE}): its readiness "
            f"is the stub's alone there; "
            f"harness.is_ready() answers as {facts.release} would, without calling it",
            ReleaseSurfaceWarning,
            stacklevel=4,
        )


@dataclass(frozen=True)
class Readiness:
    """What the server answers for a model's readiness: ``ready``, and when not, the error
    code (``UNAVAILABLE``, ``INTERNAL``) and message the Python backend gives. A client sees
    only "not ready": core r26.03 ``src/server.cc`` (ModelIsReady) asks every instance and
    writes the message to its verbose log."""

    ready: bool
    code: str = ""
    message: str = ""

    def __bool__(self) -> bool:
        return self.ready


def _with_timeout(call: Callable[[], Any], timeout: float) -> Dict[str, Any]:
    """Run ``call`` in a thread of its own; {'value': ...}, {'error': exc}, or {} on timeout
    (the thread is left to finish, as the stub's is)."""
    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # the stub reports any exception as not ready
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="tritonpy-is-ready", daemon=True)
    worker.start()
    worker.join(timeout)
    return dict(outcome)


def readiness(
    facts: ReleaseFacts,
    model: Any,
    instance: str,
    call: Callable[[Callable[[], Any]], Any],
    stub_dead: bool,
    timeout: float = READY_TIMEOUT_S,
) -> Readiness:
    """The release's answer for a model's readiness. ``call`` runs a model hook as the
    harness does (coroutines to completion); ``stub_dead``: the model ended its process."""
    if stub_dead:
        if facts.model_ready_tracks_stub:
            return Readiness(False, "INTERNAL", f"Stub process '{instance}' is not healthy.")
        return Readiness(True)  # before 25.12 a dead stub's model still reads ready
    hook = getattr(model, "is_ready", None)
    if hook is None or not facts.has_api(API_IS_READY):
        return Readiness(True)
    outcome = _with_timeout(lambda: call(hook), timeout)
    if not outcome:
        return Readiness(
            False, "UNAVAILABLE", "Timed out waiting for user-defined is_ready() response"
        )
    error = outcome.get("error")
    if error is None and not isinstance(outcome["value"], bool):
        return Readiness(False, "INTERNAL", "is_ready() must return a boolean value")
    if error is not None:
        return Readiness(False, "INTERNAL", f"{type(error).__name__}: {error}")
    if not outcome["value"]:
        return Readiness(
            False,
            "UNAVAILABLE",
            f"Model '{instance}' is not ready (user-defined check failed).",
        )
    return Readiness(True)
