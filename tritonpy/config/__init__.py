"""Model configuration (``config.pbtxt``) tooling: read, write and edit it through Triton's
protobuf ``ModelConfig`` message (never a hand-made parser).

Needs ``tritonclient[grpc]`` and ``protobuf`` (``pip install 'tritonpy[config]'``); the runtime
never imports this package. The functions are those of :mod:`tritonpy._tooling.pbtxt`, the one
reader and writer of model configurations, re-exported here.
"""

from __future__ import annotations

from .._tooling import pbtxt
from .._tooling.pbtxt import *  # noqa: F403 (the public names of pbtxt, listed once there)

__all__ = list(pbtxt.__all__)
