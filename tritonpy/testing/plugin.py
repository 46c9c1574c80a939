"""pytest plugin for tritonpy (registered through the ``pytest11`` entry point).

Fixtures:

- ``triton_model`` (alias ``model_harness``): a factory, ``h = triton_model(path_or_class,
  **kwargs)`` returns a :class:`tritonpy.testing.ModelHarness`; every harness made is closed
  (``finalize()`` called) at teardown.
- ``fake_pb_utils``: the fake ``triton_python_backend_utils`` installed in ``sys.modules`` for
  the test (logs, metrics and BLS registrations cleared before and after).

Option ``--triton-release YY.MM``: the target release of every harness ``triton_model`` makes
without a ``release=`` of its own (default: the bundled 24.10), so one suite runs against
several releases' pb_utils surfaces (``pytest --triton-release 26.07``).

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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--triton-release",
        default=None,
        metavar="YY.MM",
        help="tritonpy: the Triton release whose pb_utils surface the triton_model harnesses "
        "show (default 24.10, the bundled server's)",
    )


@pytest.fixture
def triton_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ModelHarness]]:
    """Factory fixture: ``harness = triton_model("models/add_sub")`` or
    ``triton_model(MyModel, config={...})``, any ModelHarness keyword included
    (``triton_model(MyModel, release="26.07")``); closed at teardown."""
    from ._harness import ModelHarness

    made: List[ModelHarness] = []

    release = request.config.getoption("triton_release", None)

    def factory(model: Any, **kwargs: Any) -> ModelHarness:
        if release is not None:
            kwargs.setdefault("release", release)
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
