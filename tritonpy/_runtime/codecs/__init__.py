"""Codecs: how each declared input and output is decoded for ``infer`` and encoded back.

=================  ============  ===============================================
codec              Triton type   ``infer`` sees / returns
=================  ============  ===============================================
``Tensor``         any numeric   numpy array (rows of all requests merged)
``Text``           TYPE_STRING   ``str`` per element (UTF-8)
``Bytes``          TYPE_STRING   ``bytes`` per element (exactly as sent)
``JSON``           TYPE_STRING   parsed JSON value per element
``Image``          TYPE_STRING   ``H x W x C`` uint8 array per element (OpenCV)
``TorchTensor``    any numeric   ``torch.Tensor`` through DLPack (no copy)
=================  ============  ===============================================
"""

from __future__ import annotations

from ._plan import CodecPlan
from .base import MISSING, Codec, ElementCodec
from .image import Image
from .json_codec import JSON
from .tensor import Tensor
from .text import Bytes, Text
from .torch_tensor import TorchTensor

__all__ = [
    "JSON",
    "MISSING",
    "Bytes",
    "Codec",
    "CodecPlan",
    "ElementCodec",
    "Image",
    "Tensor",
    "Text",
    "TorchTensor",
]
