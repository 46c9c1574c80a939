"""``tp.Model.torch_threads``: torch's intra-op thread count in a model instance's stub
(and the check of ``tune_malloc``, the other process-wide setting a model declares).

torch starts one intra-op thread per core, and after each parallel operation those threads
spin for a while before they sleep. In a stub that serves small batches, that spinning is
CPU taken from the server and the other stubs: measured on this project's digits ensemble
(a small MLP member, c = 4, 2 cores), the classifier's stub used 1.3-1.5 ms of CPU per request
with torch's default against 0.24-0.28 ms with one thread, and the ensemble served 30 % more.
A large model that runs one request at a time on an otherwise idle machine is the case where
more threads pay off; it keeps ``torch_threads = None`` (torch's default).
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

from .errors import DeclarationError


def check_torch_threads(cls: type) -> None:
    """A DeclarationError unless ``cls.torch_threads`` is None or a positive integer."""
    value: Any = getattr(cls, "torch_threads", None)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DeclarationError(
            f"{cls.__name__}.torch_threads must be a positive integer (1 for a small model "
            f"in a busy server) or None for torch's default, got {value!r}"
        )


def check_tune_malloc(cls: type) -> None:
    """A DeclarationError unless ``cls.tune_malloc`` is True or False (a string such as
    ``"false"`` would otherwise read as true)."""
    value: Any = getattr(cls, "tune_malloc", True)
    if not isinstance(value, bool):
        raise DeclarationError(f"{cls.__name__}.tune_malloc must be True or False, got {value!r}")


def apply_torch_threads(threads: Optional[int], model_name: str) -> None:
    """``torch.set_num_threads(threads)`` for this process; nothing when ``threads`` is None.

    Example::

        apply_torch_threads(1, "classifier")
    """
    if threads is None:
        return
    try:
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise DeclarationError(
            f"{model_name}: torch_threads = {threads} needs PyTorch in the model's environment "
            f"({exc}); install torch there or remove torch_threads"
        ) from None
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
