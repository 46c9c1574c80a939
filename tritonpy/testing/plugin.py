"""pytest plugin for tritonpy (registered through the ``pytest11`` entry point).

Fixtures:

- ``triton_model`` (alias ``model_harness``): a factory, ``h = triton_model(path_or_class,
  **kwargs)`` returns a :class:`tritonpy.testing.ModelHarness`; every harness made is closed
  (``finalize()`` called) at teardown.
- ``fake_pb_utils``: the fake ``triton_python_backend_utils`` installed in ``sys.modules`` for
  the test (logs, metrics and BLS registrations cleared before and after).

Importing this module is cheap: numpy and tritonclient load only when a fixture is used.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from typing import TYPE_CHECKING, Any, Callable, Iterator, List

import pytest

if TYPE_CHECKING:
    from types import ModuleType

    from ._harness import ModelHarness


@pytest.fixture
def triton_model() -> Iterator[Callable[..., ModelHarness]]:
    """Factory fixture: ``harness = triton_model("models/add_sub")`` or
    ``triton_model(MyModel, config={...})``, any ModelHarness keyword included
    (``triton_model(MyModel, release="26.07")``); closed at teardown."""
    from ._harness import ModelHarness

    made: List[ModelHarness] = []

    def factory(model: Any, **kwargs: Any) -> ModelHarness:
        harness = ModelHarness(model, **kwargs)
        made.append(harness)
        return harness

    try:
        yield factory
    finally:
        errors = []
        for harness in reversed(made):
            try:
                harness.close()
            except Exception as exc:  # close them all, then report
                errors.append(exc)
        if errors:
            raise errors[0]


@pytest.fixture
def model_harness(
    triton_model: Callable[..., ModelHarness],
) -> Callable[..., ModelHarness]:
    """Alias of ``triton_model``."""
    return triton_model


@pytest.fixture
def fake_pb_utils() -> Iterator[ModuleType]:
    """The fake pb_utils, installed as ``sys.modules["triton_python_backend_utils"]``."""
    from . import fake_pb_utils as module
    from ._install import install_fake_pb_utils, uninstall_fake_pb_utils

    module.reset()
    install_fake_pb_utils()
    try:
        yield module
    finally:
        uninstall_fake_pb_utils()
        module.reset()
