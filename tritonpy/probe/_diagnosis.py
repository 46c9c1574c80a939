"""Reading the server's error messages: was a probe refused by the server before any model ran,
and whose stub process is dead?

Both come from the messages of the real Triton 24.10 server (the tests in
``tests/integration/test_probe_kinds.py`` check each):

- the server's own checks of a request, made before a model sees it, start with
  ``[request id: <id>] `` (unknown or missing inputs, shapes, data types, batch sizes), or are
  the sequence batcher's (``inference request to model 'M' must specify a non-zero or
  non-empty correlation ID``, ``... must specify the START flag on the first request of the
  sequence``, ``... must specify batch-size 1 due to requirements of sequence batcher``), or
  ``generate_stream``'s JSON reading (``The schema can not convert input 'X' to tensor with
  proper shape``, ``Unable to parse 'data': ...``);
- an ensemble prefixes its member's error with ``in ensemble 'E', ``;
- a dead stub reads ``Stub process 'INSTANCE' is not healthy.``, INSTANCE the model instance
  (``square_0_0``: the model, its instance group's index, the instance's index), also inside a
  BLS caller's error (``Failed to process the request(s) for model 'caller_0_0', message:
  TritonModelException: Stub process 'callee_0_0' is not healthy.``).

Example::

    server_refused("inference request to model 'seq' must specify a non-zero or non-empty "
                   "correlation ID")                               # True
    dead_stub("in ensemble 'e', Stub process 'sq_0_0' is not healthy.", ["e", "sq"])  # 'sq'
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

_ENSEMBLE_PREFIX = re.compile(r"^(?:in ensemble '[^']*', )+")
_SERVER_PREFIX = re.compile(r"^\[request id: [^\]]*\] ")
_SERVER_MESSAGES = (
    "must specify a non-zero or non-empty correlation ID",
    "must specify the START flag on the first request of the sequence",
    "due to requirements of sequence batcher",
    "The schema can not convert input",
    "Unable to parse 'data'",
    "unexpected number of string elements",
    "doesn't support models with decoupled transaction policy",
)
_DEAD_STUB = re.compile(r"Stub process '([^']+)' is not healthy")


def server_refused(message: str) -> bool:
    """Whether ``message`` is the server's refusal of a request before any model ran (its own
    checks, the sequence batcher's, ``generate_stream``'s), an ensemble's member's included.

    >>> server_refused("[request id: <id_unknown>] unexpected shape for input 'X' for model 'm'")
    True
    >>> server_refused("input 'IMAGE', row 0: expected an encoded image")
    False
    """
    own = _ENSEMBLE_PREFIX.sub("", message)
    if _SERVER_PREFIX.match(own):
        return True
    return any(part in own for part in _SERVER_MESSAGES)


def dead_stub(message: str, models: Iterable[str]) -> Optional[str]:
    """The model whose stub process ``message`` says is dead, found among ``models`` (the
    longest name the instance's name starts with), or the instance's name when none matches;
    None when the message names no dead stub.

    >>> dead_stub("Stub process 'square_0_0' is not healthy.", ["square", "sq"])
    'square'
    """
    found = _DEAD_STUB.search(message)
    if found is None:
        return None
    instance = found.group(1)
    matches = [m for m in models if instance == m or instance.startswith(m + "_")]
    return max(matches, key=len) if matches else instance
