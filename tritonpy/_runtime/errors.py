"""The tritonpy exception tree.

Every error tritonpy raises derives from :class:`TritonPyError`, so one ``except`` catches them
all. Messages follow one rule: say what failed, name the input/output/model/file involved, give
what was expected and what came, and say how to fix it.

::

    TritonPyError
    ├── DeclarationError      a Model subclass or its config.pbtxt is inconsistent (load time)
    ├── InputError            a request's input is bad -> that request gets INVALID_ARG
    ├── OutputError           infer() returned something that does not fit the declared outputs
    ├── TritonRequestError    a request came back with an error (harness or real server)
    └── ToolError             tooling (config, server, envs, stubs) could not do its job
        └── MissingDependencyError   an optional package the feature needs is not installed
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Type


class TritonPyError(Exception):
    """Root of every error raised by tritonpy."""


class DeclarationError(TritonPyError):
    """A model's declarations (inputs, outputs, max_batch_size, codecs) are invalid or disagree
    with the model configuration Triton loaded. Raised at class definition, auto-complete or
    initialize time, so the model fails to load with this message instead of failing requests.
    """


class InputError(TritonPyError):
    """A request carries an input that cannot be used.

    Raise it from ``infer`` for bad input that only your code can detect; tritonpy turns it into
    an ``INVALID_ARG`` error for the request(s) concerned while the other requests of the batch
    still succeed.

    Example::

        def infer(self, TEXT):
            if any(not t for t in TEXT):
                raise tp.InputError("input 'TEXT': expected non-empty text, got an empty string")
    """

    def __init__(self, message: str, *, input_name: Optional[str] = None) -> None:
        super().__init__(message)
        self.input_name = input_name


class OutputError(TritonPyError):
    """``infer`` returned outputs that do not match the declarations (a missing name, a wrong
    row count, dtype or shape). It is a bug of the model, reported as ``INTERNAL``."""


class TritonRequestError(TritonPyError):
    """An inference request completed with an error.

    ``code`` is the Triton error code name (``"INVALID_ARG"``, ``"INTERNAL"``, ``"CANCELLED"``,
    ...) and ``message`` the error text, exactly as the model (or the server) produced it.
    ``model`` names the model a BLS call (``Model.call`` and its kin) went to, None for a
    client's request; such an error reads ``call to model 'NAME' failed: MESSAGE``, without
    the code: re-raised from ``infer()`` it becomes the caller's error response, to which the
    server (or the client) adds the caller's own code, so the text shows one code, not two.

    Example::

        str(TritonRequestError("INVALID_ARG", "input 'X': expected FP32"))
        # "[INVALID_ARG] input 'X': expected FP32"
        str(TritonRequestError("INTERNAL", "Stub process 'b_0_0' is not healthy.", model="b"))
        # "call to model 'b' failed: Stub process 'b_0_0' is not healthy."
    """

    def __init__(self, code: str, message: str, *, model: Optional[str] = None) -> None:
        if model is None:
            super().__init__(f"[{code}] {message}")
        else:
            super().__init__(f"call to model {model!r} failed: {message}")
        self.code = code
        self.message = message
        self.model = model

    def __reduce__(self) -> Tuple[Any, ...]:
        # pickle would call the class with the one formatted text: rebuild it from its parts
        return (_request_error, (type(self), self.code, self.message, self.model), self.__dict__)


def _request_error(
    cls: Type[TritonRequestError], code: str, message: str, model: Optional[str]
) -> TritonRequestError:
    return cls(code, message, model=model)


class ToolError(TritonPyError):
    """A tritonpy tool (config writer, checker, server launcher, environment or stub builder)
    could not complete."""


class MissingDependencyError(ToolError):
    """A tritonpy feature needs an optional package that is not installed (or cannot be
    imported).

    ``feature`` names what needed it (``"tritonpy check"``), ``modules`` the missing import
    names, ``packages`` their pip names, ``extra`` the tritonpy extra that brings them (None
    when none does) and ``install`` the command that fixes it. Raise it through
    :func:`tritonpy._runtime._optional.require`; the ``tritonpy`` command prints it as one line
    and exits with status 2.

    Example::

        MissingDependencyError("tritonpy check", ("google.protobuf",), ("protobuf",),
                               "config", "pip install 'tritonpy[config]'")
    """

    def __init__(
        self,
        feature: str,
        modules: Tuple[str, ...],
        packages: Tuple[str, ...],
        extra: Optional[str],
        install: str,
        reason: str = "not installed",
    ) -> None:
        self.feature = feature
        self.modules = modules
        self.packages = packages
        self.extra = extra
        self.install = install
        self.reason = reason
        super().__init__(f"{feature} needs {' and '.join(packages)} ({reason}): {install}")

    def for_feature(self, feature: str) -> MissingDependencyError:
        """The same error, worded for another feature (the CLI names its subcommand)."""
        return MissingDependencyError(
            feature, self.modules, self.packages, self.extra, self.install, self.reason
        )
