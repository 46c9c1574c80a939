"""The private engine behind :class:`tritonpy.Model`: everything ``execute()`` does.

``Model.initialize`` builds one :class:`~tritonpy._runtime._engine.engine.Engine` from the
class's declarations, the instance's codecs (``setup()`` may replace them) and the model
configuration, and keeps it in one name-mangled attribute; ``Model.execute`` hands it the
requests. The user's class then carries only what users touch (hooks, declarations, helpers),
so an attribute a model defines can never replace a step of tritonpy's.

The engine's paths, each an explicit method bound from the module that holds it:

* ``_decoding``: a request's inputs decoded by their codecs (``decode``, ``decode_present``,
  ``decode_rows``, ``one_values``);
* ``_alone``: one request alone, from its inputs to its response (``serve_alone``,
  ``respond``);
* ``_direct``: the direct paths, one request or a merged call in the few calls a
  hand-written model makes (``serve_direct``, ``merge_direct``);
* ``_merged``: several requests merged per group, the result split back, and a failing
  group re-run request by request (``execute_merged``, ``isolate``);
* ``_streaming`` and ``_async``: decoupled models and ``async def infer``.
"""

from __future__ import annotations
