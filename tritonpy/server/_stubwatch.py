"""Find the ``triton_python_backend_stub`` processes of one tritonserver through ``/proc`` and
tell which model and instance each one serves, and how a dead one ended.

Release 24.10 starts each stub as a child of tritonserver with this command line::

    triton_python_backend_stub <repo>/<model>/<version>/model.py <shm region> <shm size>
        <shm growth> <server pid> <backend lib dir> <ipc handle> <instance name> <runtime>

The model is the directory two levels above the model file (Triton requires it to be named
like the model); the instance name (``dbl_0``, ``add_sub_0_0``) is the eighth argument. A model
served from object storage runs out of tritonserver's local copy, ``/tmp/folderXXXXXX``
(core@r24.10:src/filesystem/implementations/local.h ``MakeTemporaryDirectory``, used by s3.h
``LocalizePath``), which does not carry the model's name: then the model is the one of the
server's models that the instance name starts with. A stub
that dies on its own stays a zombie until Triton unloads its model (the Python backend reaps it
only then), so its exit status is still readable in ``/proc/<pid>/stat``.

Example::

    [(s.model, s.instance) for s in live_stubs(server.pid)]   # [('dbl', 'dbl_0')]
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, List, Optional, Sequence, Set, Tuple, Union

STUB_EXECUTABLE = "triton_python_backend_stub"
_INSTANCE_ARG = 8  # argv index of the instance name
_LOCALIZED = re.compile(r"folder[0-9A-Za-z]{6}")  # mkdtemp's "folderXXXXXX"


@dataclass(frozen=True)
class ChildProcess:
    """One child of a process as ``/proc`` shows it.

    ``exit_status`` is the raw wait status of a zombie (``None`` for a live process);
    ``argv`` is empty for a zombie (the kernel has freed its memory).
    """

    pid: int
    state: str
    argv: Tuple[str, ...]
    exit_status: Optional[int] = None

    @property
    def dead(self) -> bool:
        return self.state in ("Z", "X")


@dataclass(frozen=True)
class StubProcess:
    """A stub process: its pid, the model it serves and the instance's name."""

    pid: int
    model: str
    instance: str


def stub_of(pid: int, argv: Sequence[str], models: Collection[str] = ()) -> Optional[StubProcess]:
    """The stub described by a command line, or ``None`` when it is not a model instance's
    stub (another program, or Triton's short-lived auto-complete stub, which has no instance).
    ``models``: the server's model names, to name the model of a localized copy (object
    storage), whose directory is not named after it.

    Example::

        stub_of(42, ["/b/triton_python_backend_stub", "/r/dbl/1/model.py", "shm", "1", "1",
                     "7", "/b", "336", "dbl_0", "DEFAULT"]).instance   # 'dbl_0'
    """
    if len(argv) <= _INSTANCE_ARG or os.path.basename(argv[0]) != STUB_EXECUTABLE:
        return None
    model_file = Path(argv[1])
    model = model_file.parent.parent.name
    instance = argv[_INSTANCE_ARG]
    if models and model not in models and _LOCALIZED.fullmatch(model):
        model = _owner(instance, models) or model
    if not model or instance == model:  # the auto-complete stub is named after the model
        return None
    return StubProcess(pid, model, instance)


def _owner(instance: str, models: Collection[str]) -> Optional[str]:
    """The longest of ``models`` that ``instance`` (``<model>_<n>``, ``<model>_<g>_<n>``) is
    named after; ``None`` when none is (an instance group named by the user)."""
    owners = [m for m in models if instance == m or instance.startswith(f"{m}_")]
    return max(owners, key=len) if owners else None


def _read_child(entry: Path, parent: int) -> Optional[ChildProcess]:
    try:
        stat = (entry / "stat").read_bytes().decode("utf-8", "replace")
        # "pid (comm) state ppid ..."; comm may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) != parent:
            return None
        state = fields[0]
        # field 52 of stat, the wait status of a zombie (Linux 3.5+)
        status = int(fields[49]) if state in ("Z", "X") and len(fields) > 49 else None
        raw = (entry / "cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return None  # gone meanwhile, or not ours to read
    argv = tuple(a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]) if raw else ()
    return ChildProcess(int(entry.name), state, argv, status)


def child_processes(parent: int, proc_root: Union[str, Path] = "/proc") -> List[ChildProcess]:
    """The children of ``parent``, zombies included, sorted by pid (one look: every pid is
    read; :class:`ChildWatch` for repeated looks)."""
    return ChildWatch(parent, proc_root).children()


class ChildWatch:
    """The children of one process, looked at again and again (the healer's tick) without
    reading every process's ``stat`` each time.

    A process that is not a child of ``parent`` never becomes one (Linux gives a process a
    new parent only when its own parent dies, and then init or a subreaper), so each look
    lists ``/proc`` and reads the ``stat`` of new pids and of known children only. A pid that
    leaves the listing is forgotten (its number may be reused); every ``full_every`` looks,
    all pids are read again, for a pid reused between two looks.

    Example::

        watch = ChildWatch(server.pid)
        watch.children()    # the same list as child_processes(server.pid)
    """

    def __init__(
        self, parent: int, proc_root: Union[str, Path] = "/proc", *, full_every: int = 100
    ) -> None:
        self.parent = parent
        self.root = Path(proc_root)
        self.full_every = full_every
        self._others: Set[str] = set()  # pids seen not to be children
        self._looks = 0

    def children(self) -> List[ChildProcess]:
        """The children of ``parent`` now, zombies included, sorted by pid."""
        try:
            names = [n for n in os.listdir(self.root) if n.isdigit()]
        except OSError:
            return []
        self._looks += 1
        if self._looks % self.full_every == 0:
            self._others.clear()
        else:
            self._others.intersection_update(names)
        found: List[ChildProcess] = []
        for name in names:
            if name in self._others:
                continue
            child = _read_child(self.root / name, self.parent)
            if child is None:
                self._others.add(name)
            else:
                found.append(child)
        return sorted(found, key=lambda c: c.pid)


def live_stubs(server_pid: int, proc_root: Union[str, Path] = "/proc") -> List[StubProcess]:
    """The model-instance stubs of a tritonserver that are running now."""
    stubs = (stub_of(c.pid, c.argv) for c in child_processes(server_pid, proc_root) if not c.dead)
    return [s for s in stubs if s is not None]


def describe_exit(status: Optional[int]) -> str:
    """A wait status in words: ``SIGKILL``, ``exit code 1``; ``unknown cause`` for ``None``.

    Example::

        describe_exit(9)      # 'SIGKILL'
        describe_exit(256)    # 'exit code 1'
    """
    if status is None:
        return "unknown cause"
    if status & 0x7F:
        number = status & 0x7F
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"{name}, core dumped" if status & 0x80 else name
    return f"exit code {(status >> 8) & 0xFF}"


def describe_returncode(returncode: Optional[int]) -> str:
    """A ``Popen.returncode`` in words: ``killed by SIGKILL``, ``exit code 1``.

    Example::

        describe_returncode(-9)   # 'killed by SIGKILL'
    """
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
