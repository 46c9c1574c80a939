"""tritonpy: write Python models for NVIDIA Triton Inference Server declaratively."""

from __future__ import annotations

from .errors import (
    DeclarationError,
    InputError,
    OutputError,
    ToolError,
    TritonPyError,
    TritonRequestError,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "DeclarationError",
    "InputError",
    "OutputError",
    "ToolError",
    "TritonPyError",
    "TritonRequestError",
    "__version__",
]
