"""pb_utils model repository functions, backed by the BLS registry of the fake (a server has a
model repository; the fake has this registry)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from .errors import TritonModelException

if TYPE_CHECKING:
    from .requests import InferenceRequest

#: BLS targets: model name -> callable(request) returning an InferenceResponse, or (decoupled)
#: an iterable of InferenceResponse. Fill it with :func:`register_bls_model`.
BLSHandler = Callable[["InferenceRequest"], Any]
_bls_models: Dict[str, BLSHandler] = {}


def register_bls_model(name: str, handler: BLSHandler) -> None:
    """Not in the real module: make ``InferenceRequest(model_name=name).exec()`` call
    ``handler(request)`` and ``is_model_ready(name)`` return True."""
    _bls_models[name] = handler


def unregister_bls_model(name: str) -> None:
    """Not in the real module: undo :func:`register_bls_model`."""
    _bls_models.pop(name, None)


_model_dir: str = ""


def get_model_dir() -> str:
    """The directory of the model being run (the harness sets it)."""
    return _model_dir


def load_model(model_name: str, config: str = "", files: Optional[Dict[str, bytes]] = None) -> None:
    if model_name in _bls_models:
        return
    raise TritonModelException(
        f"Failed to load model '{model_name}': the fake pb_utils has no model repository; "
        f"register the model with ModelHarness.register_bls_model('{model_name}', handler)"
    )


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    if model_name not in _bls_models:
        raise TritonModelException(
            f"Failed to unload model '{model_name}': no such model in the fake pb_utils registry"
        )
    _bls_models.pop(model_name)


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    return model_name in _bls_models
