"""Load tests and configuration search for served models: ``tritonpy perf`` and
``tritonpy tune``.

- :mod:`.inputs`: valid request inputs from a model's configuration (and its tritonpy
  declarations, when known), or from user files;
- :mod:`.kinds`: the model's kind (plain, decoupled, sequence) from its configuration;
- :mod:`.engine`: a bounded closed-loop load generator over gRPC or HTTP;
- :mod:`.stream`: a gRPC stream per worker for decoupled models;
- :mod:`.sequences`: sequences of requests with correlation ids and START/END for sequence
  models;
- :mod:`.refusals`: why a model cannot be measured, named with the fix;
- :mod:`.cpu`: server CPU seconds through psutil (the pid found from the URL's port);
- :mod:`.stats`: Triton's per-model statistics, before/after differences;
- :mod:`.report`: one measurement point per concurrency, the table and the JSON;
- :mod:`.perf_analyzer`: perf_analyzer as the load engine where it is installed;
- :mod:`.runner`: :func:`run_perf`, the whole sweep;
- :mod:`.candidates`, :mod:`.tune`: the configurations and their search on the embedded
  server.

Example::

    from tritonpy.perf import PerfOptions, run_perf

    report = run_perf("add_sub", "localhost:8001", concurrency=(1, 4), duration=2.0)
    report = run_perf("add_sub", "localhost:8001", PerfOptions(concurrency=(1, 4)))
    print(report.table())
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from ._options import PerfOptions, TuneOptions
from ._report import PerfPoint, PerfReport
from ._runner import run_perf
from ._tune import tune

__all__ = ["PerfOptions", "PerfPoint", "PerfReport", "TuneOptions", "run_perf", "tune"]

_publish(__name__, globals())
