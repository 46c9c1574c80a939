"""pb_utils model repository functions, backed by the BLS registry of the fake (a server has a
model repository; the fake has this registry)."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import sys
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Set

from ..._tooling.errors import ModelLoadError
from ._errors import ServerAbort, TritonModelException

if TYPE_CHECKING:
    from ._requests import InferenceRequest

#: BLS targets: model name -> callable(request) returning an InferenceResponse, or (decoupled)
#: an iterable of InferenceResponse. Fill it with :func:`register_bls_model`.
BLSHandler = Callable[["InferenceRequest"], Any]
_bls_models: Dict[str, BLSHandler] = {}


#: registered models that unload_model() took down (load_model() brings them back)
_unloaded: Set[str] = set()


def register_bls_model(name: str, handler: BLSHandler) -> None:
    """Not in the real module: make ``InferenceRequest(model_name=name).exec()`` call
    ``handler(request)`` and ``is_model_ready(name)`` return True. A handler with a
    ``model_version`` attribute is ready for that version only (the server's models have
    versions; a plain callable is ready for any)."""
    _bls_models[name] = handler
    _unloaded.discard(name)


def unregister_bls_model(name: str) -> None:
    """Not in the real module: undo :func:`register_bls_model`."""
    _bls_models.pop(name, None)
    _unloaded.discard(name)


def loaded_handler(name: str) -> Optional[BLSHandler]:
    """The handler of a loaded model, None if it is unknown or unloaded."""
    return None if name in _unloaded else _bls_models.get(name)


_model_dir: str = ""
#: the model instance name put into the server's error messages (metrics, load_model)
_instance_name: str = "model_0"


def get_model_dir() -> str:
    """The directory of the model being run (the harness sets it)."""
    return _model_dir


def instance_name() -> str:
    """Not in the real module: the instance name of the model being run (as the server's
    messages name it)."""
    return _instance_name


@contextmanager
def model_running(name: Optional[str], model_dir: str) -> Iterator[None]:
    """Not in the real module: while the harness runs a model's code, the instance ``name``
    (None: keep the current one) and ``model_dir`` that pb_utils functions report."""
    global _instance_name, _model_dir, _running_depth
    previous = _instance_name, _model_dir
    _instance_name, _model_dir = (_instance_name if name is None else name), model_dir
    _running_depth += 1
    try:
        yield
    finally:
        _running_depth -= 1
        _instance_name, _model_dir = previous


#: how many model_running() blocks are open (model code runs while it is above 0)
_running_depth = 0


def in_model_code() -> bool:
    """Not in the real module: whether model code runs now, under the harness (its
    ``model_running`` block: an ``async def execute``'s tasks included, whose frames do
    not show ``execute``) or called as a model's hook (see :func:`model_hook`)."""
    return _running_depth > 0 or model_hook() is not None


def load_model(model_name: str, config: str = "", files: Optional[Dict[str, bytes]] = None) -> None:
    """Load a registered model again (the fake's repository is its BLS registry); an unknown
    one fails with the server's message (measured, 24.10)."""
    if model_name in _bls_models:
        _unloaded.discard(model_name)
        return
    message = (
        f"Failed to load model: Failed to process the request for model '{_instance_name}', "
        f"message: failed to load '{model_name}', failed to poll from model repository"
    )
    # the refusal comes back through the stub's error path that, measured on 24.10, now and
    # then aborts the whole tritonserver (boost lock_exception) instead
    raise ServerAbort(
        f"load_model({model_name!r}) refused by the server, which raises "
        f"TritonModelException({message!r}) only some of the time: tritonserver 24.10 may "
        "abort instead, ending the whole server process (terminate: "
        "boost::interprocess::lock_exception; measured). Load only models the repository has"
    )


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """As the server: unloading a model it does not have is no error (measured, 24.10)."""
    if model_name in _bls_models:
        _unloaded.add(model_name)


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    handler = loaded_handler(model_name)
    if handler is None:
        return False
    version = getattr(handler, "model_version", None)
    return not model_version or version is None or str(version) == str(model_version)


#: the stub's refusal of BLS outside ``execute`` (python_backend r24.10 src/infer_request.cc)
BLS_OUTSIDE_EXECUTE = "BLS is only supported during the 'execute' function."

_HOOKS = ("initialize", "execute", "finalize")


class BLSInInitializeError(TritonModelException, ModelLoadError):
    """Not in the real module: the stub's TritonModelException for BLS in ``initialize``
    (its text is the stub's), also a :class:`~tritonpy.testing.ModelLoadError`: on the
    server the model then fails to load (measured, 24.10: QA bls_init_error, "failed to load
    '<model>' version 1: Internal: TritonModelException: BLS is only supported during the
    'execute' function."). ``explanation`` says what to do instead."""

    def __init__(self) -> None:
        ModelLoadError.__init__(self, BLS_OUTSIDE_EXECUTE)
        self.explanation = (
            "a BLS request (InferenceRequest.exec/async_exec) was sent from the model's "
            "initialize(); Triton serves BLS only while execute() runs, so the model fails "
            "to load. Send the request from execute() (e.g. on the first request) instead"
        )


def model_hook() -> Optional[str]:
    """Not in the real module: the model hook (``initialize``, ``execute``, ``finalize``) the
    code calling now runs in, None outside any (test code, the harness, a model's own
    thread). The nearest calling frame that is a hook of a model object (one with an
    ``execute`` method) decides, so a BLS target's ``initialize`` run lazily inside its
    caller's ``execute`` counts as ``initialize``, as on the server."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        owner = frame.f_locals.get("self") if name in _HOOKS else None
        if owner is not None and callable(getattr(owner, "execute", None)):
            return name
        frame = frame.f_back
    return None


def bls_refusal() -> Optional[TritonModelException]:
    """Not in the real module: the stub's exception for a BLS call made now, None when the
    call runs inside a model's ``execute`` (or outside any model hook, see
    :func:`model_hook`). From ``finalize`` the stub raises the same text, which the server
    logs, unloading the model as usual (measured, 24.10: QA bls_finalize_error)."""
    hook = model_hook()
    if hook == "initialize":
        return BLSInInitializeError()
    return TritonModelException(BLS_OUTSIDE_EXECUTE) if hook == "finalize" else None
