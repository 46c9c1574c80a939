"""What a ``triton_python_backend_stub`` binary says about itself: which Triton release built
it, and whether the libpython it needs can be found.

The stub carries no version string of its own (the r24.10 sources compile none in), so the
release is read, in order, from

1. a ``tritonpy-stub-release=rYY.MM`` mark anywhere in the file (an ELF section a build can add
   with ``objcopy --add-section``);
2. the SHA-256 of the prebuilt stubs of the ``nvidia-pytriton`` wheels tritonpy knows;
3. the local stub cache (``stub.json`` beside each cached stub records its release).

Example::

    origin = stub_release(Path("repo/preprocess/triton_python_backend_stub"))
    origin.release, origin.how   # ('24.10', 'the nvidia-pytriton 0.7.0 wheel's prebuilt ...')
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from .._tooling.digests import file_sha256, read_blocks
from ..stubs import WHEEL_RELEASES, StubCache

#: the mark a build may put into the stub (``tritonpy-stub-release=r24.10``)
RELEASE_MARK = b"tritonpy-stub-release="
_MARK = re.compile(re.escape(RELEASE_MARK) + rb"r?(\d{2}\.\d{2})")

_WHEEL = "0.7.0"
#: SHA-256 of the prebuilt stubs of nvidia-pytriton 0.7.0 (x86_64) -> (the release it bundles,
#: Python, the wheel)
WHEEL_STUBS: Dict[str, Tuple[str, str, str]] = {
    digest: (WHEEL_RELEASES[_WHEEL], python, f"nvidia-pytriton {_WHEEL}")
    for digest, python in (
        ("41c352e7eae5ea1b3e6474a679180b770911dedef5fa836a9457f1e8601cf412", "3.8"),
        ("cf800e6d53a69556848dd95af0e591fff4e6ab848903454f6d5448185f328aad", "3.9"),
        ("251c532e0af9c057d50784cc933fd52f304163e238d51e74c0ffc1c1790188b5", "3.10"),
        ("a302adf6396501ac139da06f965aea1bf61929c99bf799f6b8797e071cd268f4", "3.11"),
        ("41a7758c6f44520b846e90a5bf8b063f99aee01698c3e32113ce352fe8369921", "3.12"),
        ("7b701b4b4bc01ca7af0350eaffa4f2aed92f02b465b3494a265059e4d3ca6cf8", "3.13"),
    )
}


@dataclass(frozen=True)
class StubOrigin:
    """The release that built a stub (``None``: cannot tell) and how that was found."""

    release: Optional[str]
    how: str


def _marked_release(path: Path) -> Optional[str]:
    tail = b""
    for block in read_blocks(path):
        found = _MARK.search(tail + block)  # the tail: a mark across two blocks
        if found:
            return found.group(1).decode()
        tail = block[-32:]
    return None


def _stub_cache(cache_root: Optional[Path]) -> Optional[StubCache]:
    if cache_root is not None:
        return StubCache(cache_root)
    try:
        return StubCache()
    except Exception:  # no usable cache directory: the cache is only one of the sources
        return None


def _cached_release(path: Path, digest: str, cache: Optional[StubCache]) -> Optional[StubOrigin]:
    size = path.stat().st_size
    for cached, meta in cache.stored() if cache is not None else ():
        try:
            if cached.stat().st_size != size or file_sha256(cached) != digest:
                continue
        except OSError:
            continue
        release = meta.get("release")
        if isinstance(release, str):
            source = meta.get("source", "unknown")
            return StubOrigin(release, f"the stub cache's r{release} {source} stub")
    return None


def stub_release(path: Path, *, cache_root: Optional[Path] = None) -> StubOrigin:
    """Which release built the stub at ``path``, from its mark, the known wheel stubs, or the
    stub cache (``cache_root``: default the one ``tritonpy stub`` fills). ``OSError``
    propagates when the file cannot be read."""
    marked = _marked_release(path)
    if marked:
        return StubOrigin(marked, f"marked {RELEASE_MARK.decode()}r{marked} in the binary")
    digest = file_sha256(path)
    known = WHEEL_STUBS.get(digest)
    if known:
        release, python, wheel = known
        return StubOrigin(release, f"the {wheel} wheel's prebuilt stub for Python {python}")
    cached = _cached_release(path, digest, _stub_cache(cache_root))
    return cached or StubOrigin(
        None, "no release mark in the binary, not a known wheel stub, not cached"
    )


def library_found(
    soname: str, stub: Path, search: Iterable[str], env_libraries: Iterable[str]
) -> bool:
    """Whether ``soname`` resolves for ``stub`` placed where it is: in the environment's
    ``lib/`` (the Python backend puts it on ``LD_LIBRARY_PATH``) or in a directory of the
    stub's RPATH/RUNPATH (``search``, ``$ORIGIN`` expanded to the stub's directory)."""
    if soname in set(env_libraries):
        return True
    origin = str(stub.parent.absolute())
    directories: List[str] = []
    for entry in search:
        directories += [
            part.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
            for part in entry.split(":")
            if part
        ]
    return any(os.path.isfile(os.path.join(d, soname)) for d in directories)
