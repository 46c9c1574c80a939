"""The import check that runs INSIDE an environment, with the environment's own python.

:mod:`tritonpy.envs._verify` passes this file's source to ``python3 -I -c`` in the unpacked
archive (Python 3.8 and later: standard library only, nothing from tritonpy until the check
imports it). It prints one line, ``TRITONPY-VERIFY {json}``, with what it found.

Which modules a distribution provides is read from its installed metadata
(:func:`import_names`): ``top_level.txt`` when present, else
``importlib.metadata.packages_distributions()`` where the Python has it (3.10+), else the
first parts of the paths in ``RECORD``; each name is then checked against the installed files:
namespace packages (``google``) are descended to their real packages (``google.protobuf``), and
folders or files that are no importable module (``scikit_learn.libs``, ``*.data``,
``*.dist-info``, ``.pth`` files, shared libraries that are no extension module, ``__pycache__``,
``..``) are never imported. So scikit-learn is ``sklearn``, Pillow ``PIL``, PyYAML ``yaml``.

Example (here, with this interpreter's own distributions)::

    import importlib.metadata as md
    import_names(md.distribution("scikit-learn"))    # ['sklearn']
    import_names(md.distribution("protobuf"))        # ['google.protobuf']
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import keyword
import mmap
import os
import re
import sys
import traceback
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

try:
    import importlib.metadata as md
except ImportError:  # Python < 3.8: no importlib.metadata; the check reports every dist
    md = None  # type: ignore[assignment]

MARK = "TRITONPY-VERIFY "
_SKIPPED = ("test", "tests")
_DEPTH = 4  # how deep a namespace package is descended to find its real packages

#: what Python imports: .py, .pyc and this Python's extension suffixes, longest first
_SUFFIXES = sorted(importlib.machinery.all_suffixes(), key=len, reverse=True)
#: the reverse of packages_distributions(), computed once: canonical dist name -> modules
_BY_DIST: Optional[Dict[str, List[str]]] = None


def canonical(name: str) -> str:
    """A distribution name in its PEP 503 form (``Pillow_SIMD`` -> ``pillow-simd``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _module_stem(filename: str) -> Tuple[str, str]:
    """(module name, suffix) of a file that Python could import, else ("", "")."""
    for suffix in _SUFFIXES:
        if filename.endswith(suffix) and len(filename) > len(suffix):
            return filename[: -len(suffix)], suffix
    return "", ""


def _exports_init(path: str, name: str) -> bool:
    """True when the shared library at ``path`` defines ``PyInit_<name>`` (an extension
    module named ``name``); a plain shared library (``libfoo.so``) does not."""
    try:
        with open(path, "rb") as stream:
            image = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return image.find(f"PyInit_{name}\0".encode()) >= 0
        finally:
            image.close()
    except (OSError, ValueError):
        return False


def _public(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")


class _Tree:
    """The installed files of one distribution (paths relative to site-packages)."""

    def __init__(self, dist: Any) -> None:
        self.dist = dist
        self.files = [tuple(f.parts) for f in (dist.files or []) if ".." not in f.parts]
        self.known = dist.files is not None

    def _children(self, prefix: Tuple[str, ...]) -> Iterable[Tuple[str, ...]]:
        n = len(prefix)
        return (p[n:] for p in self.files if len(p) > n and p[:n] == prefix)

    def _is_module_file(self, prefix: Tuple[str, ...], filename: str, name: str) -> bool:
        stem, suffix = _module_stem(filename)
        if stem != name:
            return False
        if suffix != ".so":  # .py, .pyc, and extension suffixes tagged with the ABI
            return True
        return _exports_init(str(self.dist.locate_file(os.path.join(*prefix, filename))), name)

    def heads(self) -> List[str]:
        """Top-level names of the files: folders and importable module files."""
        found = []
        for parts in self.files:
            if len(parts) > 1:
                found.append(parts[0])
            else:
                stem, _ = _module_stem(parts[0])
                if stem and self._is_module_file((), parts[0], stem):
                    found.append(stem)
        return list(dict.fromkeys(found))

    def resolve(self, dotted: Tuple[str, ...], depth: int = 0) -> Optional[List[str]]:
        """The importable modules ``dotted`` stands for: itself when it is a module or a
        regular package, its real subpackages when it is a namespace package, nothing when
        the files of that name are no module (``libfoo.so``); None when no file has that
        name."""
        folder = dotted[:-1]
        name = dotted[-1]
        inside = list(self._children(dotted))
        named = False
        for rest in self._children(folder):
            if len(rest) == 1 and _module_stem(rest[0])[0] == name:
                named = True
                if self._is_module_file(folder, rest[0], name):
                    return [".".join(dotted)]
        if not inside:
            return [] if named else None
        if any(len(r) == 1 and _module_stem(r[0])[0] == "__init__" for r in inside):
            return [".".join(dotted)]
        if depth >= _DEPTH:
            return []
        names = []  # a namespace package: its real packages and modules
        for rest in inside:
            stem = rest[0] if len(rest) > 1 else _module_stem(rest[0])[0]
            if _public(stem) and stem not in _SKIPPED:
                names.append(stem)
        found = []
        for child in dict.fromkeys(names):
            found.extend(self.resolve((*dotted, child), depth + 1) or [])
        return found


def _by_distribution() -> Dict[str, List[str]]:
    """Canonical distribution name -> top-level names, from packages_distributions()."""
    global _BY_DIST
    if _BY_DIST is None:
        _BY_DIST = {}
        mapping = getattr(md, "packages_distributions", None)
        for module, dists in (mapping() if mapping else {}).items():
            for dist in dists:
                _BY_DIST.setdefault(canonical(dist), []).append(module)
    return _BY_DIST


def _candidates(dist: Any, tree: _Tree) -> List[str]:
    top = (dist.read_text("top_level.txt") or "").split()
    if not top and getattr(md, "packages_distributions", None) is not None:
        top = _by_distribution().get(canonical(dist.metadata["Name"] or ""), [])
    if not top:
        top = tree.heads()
    usable = [t for t in top if t.isidentifier() and not keyword.iskeyword(t)]
    usable = [t for t in usable if t != "__pycache__" and t not in _SKIPPED]
    public = [t for t in usable if not t.startswith("_")]
    return list(dict.fromkeys(public or usable))


def import_names(dist: Any) -> List[str]:
    """The modules to import to prove that ``dist`` (an ``importlib.metadata.Distribution``)
    is usable, as described in the module docstring.

    Example::

        import_names(importlib.metadata.distribution("opencv-python-headless"))   # ['cv2']
    """
    tree = _Tree(dist)
    found: List[str] = []
    for top in _candidates(dist, tree):
        resolved = tree.resolve((top,)) if tree.known else None
        found.extend([top] if resolved is None else resolved)  # no file: try the name itself
    return list(dict.fromkeys(found))


def _is_not_found(exc: BaseException, module: str) -> bool:
    """True when ``exc`` says that ``module`` itself (or a parent package) does not exist,
    not that something it imports is missing."""
    name = getattr(exc, "name", None) or ""
    return isinstance(exc, ModuleNotFoundError) and (module + ".").startswith(name + ".")


def check_distributions(
    distributions: Sequence[str], skip: Sequence[str]
) -> Tuple[Dict[str, List[str]], List[str], List[List[str]]]:
    """(distribution -> modules to import, errors, [distribution, module] not found) for the
    distributions named (those in ``skip`` are left out)."""
    names: Dict[str, List[str]] = {}
    errors: List[str] = []
    unfound: List[List[str]] = []
    skipped = {canonical(s) for s in skip}
    for name in distributions:
        if canonical(name) in skipped:
            continue
        try:
            dist = md.distribution(name)
        except Exception as exc:
            errors.append(f"distribution {name} is not installed ({exc})")
            continue
        names[name] = import_names(dist)
    return names, errors, unfound


def import_all(
    names: Dict[str, List[str]], errors: List[str], unfound: List[List[str]]
) -> Dict[str, str]:
    """Import tritonpy and every module of ``names``; module -> file for those that import;
    a module that does not exist goes to ``unfound``, any other failure to ``errors``."""
    found: Dict[str, str] = {}
    owners: List[Tuple[str, str]] = [("", "tritonpy")]
    owners += [(dist, module) for dist, modules in names.items() for module in modules]
    for dist, module in owners:
        if module in found:
            continue
        try:
            found[module] = getattr(importlib.import_module(module), "__file__", None) or ""
        except BaseException as exc:
            if dist and _is_not_found(exc, module):
                unfound.append([dist, module])
            else:
                trace = traceback.format_exc(limit=-4)
                errors.append(f"import {module} failed:\n{trace}")
    return found


def _libpython() -> str:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "libpython" in line and "/" in line:
                    return line[line.index("/") :].strip()
    except OSError:
        pass
    return ""


def _codecs(model: Dict[str, Any], module: Any, codecs: Sequence[Sequence[str]]) -> None:
    """For a tritonpy model: import the package each declared codec loads on first use."""
    import tritonpy

    cls = getattr(module, "TritonPythonModel", None)
    if not (isinstance(cls, type) and issubclass(cls, tritonpy.Model)):
        return
    declared = list((cls.inputs or {}).values()) + list((cls.outputs or {}).values())
    for codec_module, codec_name, needed in codecs:
        klass = getattr(importlib.import_module(codec_module), codec_name)
        if any(isinstance(c, klass) for c in declared):
            model["codecs"].append(codec_name)
            try:
                importlib.import_module(needed)
            except ModuleNotFoundError:
                model["missing"].append([needed, "tp." + codec_name])
            except BaseException:
                trace = traceback.format_exc(limit=-3)
                model["error"] += f"tp.{codec_name} needs {needed}, which fails to import:\n{trace}"


def import_model(path: str, codecs: Sequence[Sequence[str]]) -> Dict[str, Any]:
    """Import the model file at ``path`` with tritonpy's fake pb_utils installed."""
    import importlib.util

    model: Dict[str, Any] = {"missing": [], "error": "", "codecs": []}
    try:
        from tritonpy.testing import fake_pb_utils

        sys.modules["triton_python_backend_utils"] = fake_pb_utils
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("_tritonpy_verify_model", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _codecs(model, module, codecs)
    except ModuleNotFoundError as exc:
        model["missing"].append([exc.name or "?", ""])
    except BaseException:
        model["error"] = traceback.format_exc(limit=-4)
    return model


def main(argv: Sequence[str]) -> Dict[str, Any]:
    """Run the whole check with the JSON arguments ``argv[1]``; return the result."""
    args = json.loads(argv[1])
    names, errors, unfound = check_distributions(args["distributions"], args.get("skip", []))
    found = import_all(names, errors, unfound)
    model = import_model(args["model"], args["codecs"]) if args.get("model") else None
    tp_version = ""
    if "tritonpy" in found:
        tp_version = getattr(sys.modules["tritonpy"], "__version__", "")
    return {
        "version": "{}.{}".format(*sys.version_info[:2]),
        "prefix": sys.prefix,
        "executable": sys.executable,
        "modules": found,
        "names": names,
        "unfound": unfound,
        "libpython": _libpython(),
        "errors": errors,
        "tritonpy_version": tp_version,
        "model": model,
    }


if __name__ == "__main__":
    print(MARK + json.dumps(main(sys.argv)))
