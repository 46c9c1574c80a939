"""Test Triton Python-backend models without a server.

- :mod:`tritonpy.testing.fake_pb_utils`: a faithful fake of ``triton_python_backend_utils``;
- :class:`ModelHarness`: load a model directory or class and send it requests in-process;
- :class:`EnsembleHarness`: run an ensemble's steps over one ModelHarness per member;
- :class:`RepositoryHarness`: every model of a repository, each a BLS target of the others;
- :class:`RawTarget`: a BLS target written on pb_utils requests;
- :class:`ExecuteContractError`: an ``execute()`` that breaks the stub's contract (returns
  something other than one response per request...) answers each request with the server's
  INTERNAL error, tritonpy's explanation added;
- :class:`CancelAt` (``harness.infer(..., cancel=CancelAt(check=2))``): the client cancels
  while ``execute()`` runs, and sees :class:`ClientCancelledError` (``CANCELLED``), as on
  the server;
- ``ModelHarness(..., release="26.07")``: the Triton release whose pb_utils surface, name
  rules and readiness the harness shows (default the bundled 24.10); :class:`Readiness`
  (``harness.readiness()``) and :class:`ReleaseSurfaceWarning` (a hook the release never calls);
- :class:`SequenceDriver` (``harness.sequence(id)``): one sequence of a stateful model, START
  and END set for you; :class:`ManualClock` (``harness.clock``): the time its idle timeout
  is measured in, moved by the test;
- :func:`install_fake_pb_utils`: make ``import triton_python_backend_utils`` work in tests;
- the pytest plugin (fixtures ``triton_model`` and ``fake_pb_utils``) in
  :mod:`tritonpy.testing.plugin`, registered automatically.

Importable without pytest and without tritonclient (tritonclient is needed only to parse a
``config.pbtxt``).
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from .._tooling.errors import ModelLoadError
from . import fake_pb_utils
from ._cancellation import CancelAt, ClientCancelledError
from ._clock import ManualClock
from ._config import parse_config_pbtxt
from ._ensemble import EnsembleHarness
from ._errors import ExecuteContractError, HarnessError, ModelBugError
from ._harness import ModelHarness
from ._install import fake_pb_utils_installed, install_fake_pb_utils, uninstall_fake_pb_utils

# the face this package shows tritonpy's other tooling packages: not in __all__, not public API
from ._load_checks import explain_import as explain_import
from ._loading import import_model_file as import_model_file
from ._loading import on_sys_path as on_sys_path
from ._loading import pick_version as pick_version
from ._loading import unload_package as unload_package
from ._loading import version_dirs as version_dirs
from ._process_guard import ModelProcessDiedError
from ._release import Readiness, ReleaseSurfaceWarning
from ._repository import RepositoryHarness
from ._sequence_driver import SequenceDriver
from ._targets import RawTarget

__all__ = [
    "CancelAt",
    "ClientCancelledError",
    "EnsembleHarness",
    "ExecuteContractError",
    "HarnessError",
    "ManualClock",
    "ModelBugError",
    "ModelHarness",
    "ModelLoadError",
    "ModelProcessDiedError",
    "RawTarget",
    "Readiness",
    "ReleaseSurfaceWarning",
    "RepositoryHarness",
    "SequenceDriver",
    "fake_pb_utils",
    "fake_pb_utils_installed",
    "install_fake_pb_utils",
    "parse_config_pbtxt",
    "uninstall_fake_pb_utils",
]
# one home for ModelLoadError (also exported by tritonpy.server): the kit that users meet first
_publish(__name__, globals(), adopt=["ModelLoadError"])
