"""The pure pieces of self-healing: backoff, stub-to-model mapping from a fake /proc tree,
exit descriptions, console lines, the healer's decisions on a fake /proc, and the keeper of
the server process on a fake server (known crashes, restarts, stopping)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List, Optional, Sequence, cast

import pytest

from tritonpy.cli import build_parser
from tritonpy.server import ServerError, TritonServer
from tritonpy.server._backoff import Backoff
from tritonpy.server._command import server_command
from tritonpy.server._crashes import LOCK_EXCEPTION, known_crash
from tritonpy.server._keeper import ServerExit, serve_until_exit
from tritonpy.server._procs import end_process_group
from tritonpy.server._stubwatch import (
    child_processes,
    describe_exit,
    describe_returncode,
    live_stubs,
    stub_of,
)
from tritonpy.server._supervise import (
    StubHealer,
    death_line,
    reload_failed_line,
    reloaded_line,
)

SERVER = 4000
STUB = "/cache/backends/python/triton_python_backend_stub"


def stub_argv(model: str, instance: str, repo: str = "/srv/repo") -> List[str]:
    """The command line release 24.10 gives a model instance's stub."""
    return [
        STUB,
        f"{repo}/{model}/1/model.py",
        "triton_python_backend_shm_region_3c6f",
        "1048576",
        "1048576",
        str(SERVER),
        "/cache/backends/python",
        "336",
        instance,
        "DEFAULT",
    ]


def write_proc(
    root: Path,
    pid: int,
    argv: Sequence[str],
    *,
    ppid: int = SERVER,
    state: str = "S",
    exit_status: int = 0,
) -> None:
    """One /proc/<pid> entry: stat (52 fields, the comm with a space and parentheses) and
    cmdline (empty for a zombie, as the kernel shows it)."""
    entry = root / str(pid)
    entry.mkdir(parents=True, exist_ok=True)
    rest = [state, str(ppid)] + ["0"] * 47 + [str(exit_status)]
    (entry / "stat").write_text(f"{pid} (triton_python b) " + " ".join(rest) + "\n")
    raw = b"" if state == "Z" else b"\0".join(a.encode() for a in argv) + b"\0"
    (entry / "cmdline").write_bytes(raw)


# ------------------------------------------------------------------------------- backoff
def test_backoff_free_deaths_then_doubling_to_the_cap() -> None:
    policy = Backoff(free=3, window=60, first=1, cap=60)
    delays = [policy.record(t) for t in range(12)]
    assert delays == [0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_backoff_forgets_deaths_outside_the_window() -> None:
    policy = Backoff(free=3, window=60)
    for t in (0, 1, 2, 3):
        policy.record(t)
    assert policy.recent(63.5) == 0  # all four are older than a minute
    assert policy.record(100) == 0


def test_backoff_gives_up_after_n_deaths_in_the_window() -> None:
    policy = Backoff(free=0, window=300, first=1, give_up_after=3)
    assert [policy.record(t) for t in (0, 10, 20)] == [1, 2, None]


def test_backoff_rejects_nonsense_with_the_values() -> None:
    with pytest.raises(ValueError, match="first=0"):
        Backoff(first=0)


# ----------------------------------------------------------------- stub -> model mapping
def test_stub_of_reads_model_and_instance_from_the_24_10_command_line() -> None:
    stub = stub_of(7, stub_argv("dbl", "dbl_0"))
    assert stub is not None and (stub.pid, stub.model, stub.instance) == (7, "dbl", "dbl_0")
    two = stub_of(8, stub_argv("add_sub", "add_sub_0_1", repo="/tmp/shadow-x"))
    assert two is not None and (two.model, two.instance) == ("add_sub", "add_sub_0_1")


def test_stub_of_ignores_other_programs_and_the_auto_complete_stub() -> None:
    assert stub_of(7, ["/usr/bin/bash", "-c", "exec x"]) is None
    assert stub_of(7, stub_argv("dbl", "dbl_0")[:5]) is None
    assert stub_of(7, stub_argv("dbl", "dbl")) is None  # named after the model: auto-complete


def test_child_processes_and_live_stubs_from_a_fake_proc(tmp_path: Path) -> None:
    write_proc(tmp_path, 10, stub_argv("dbl", "dbl_0"))
    write_proc(tmp_path, 11, stub_argv("add_sub", "add_sub_0_0"))
    write_proc(tmp_path, 12, stub_argv("echo", "echo_0"), state="Z", exit_status=9)
    write_proc(tmp_path, 13, stub_argv("other", "other_0"), ppid=1)  # another server's
    write_proc(tmp_path, 14, ["/usr/bin/sleep", "10"])
    (tmp_path / "self").mkdir()
    children = child_processes(SERVER, tmp_path)
    assert [c.pid for c in children] == [10, 11, 12, 14]
    zombie = children[2]
    assert zombie.dead and zombie.argv == () and zombie.exit_status == 9
    assert [(s.model, s.instance) for s in live_stubs(SERVER, tmp_path)] == [
        ("dbl", "dbl_0"),
        ("add_sub", "add_sub_0_0"),
    ]


def test_child_watch_reads_only_new_pids_and_the_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tritonpy.server._stubwatch as stubwatch

    read: List[str] = []
    real = stubwatch._read_child

    def counted(entry: Path, parent: int) -> Optional[stubwatch.ChildProcess]:
        if entry.parent == tmp_path:  # not the looks of other servers' healers in this process
            read.append(entry.name)
        return real(entry, parent)

    monkeypatch.setattr(stubwatch, "_read_child", counted)
    write_proc(tmp_path, 10, stub_argv("dbl", "dbl_0"))
    write_proc(tmp_path, 13, stub_argv("other", "other_0"), ppid=1)  # another server's
    write_proc(tmp_path, 14, ["/usr/bin/sleep", "10"], ppid=1)
    watch = stubwatch.ChildWatch(SERVER, tmp_path, full_every=5)
    assert [c.pid for c in watch.children()] == [10] and sorted(read) == ["10", "13", "14"]
    read.clear()
    write_proc(tmp_path, 11, stub_argv("add_sub", "add_sub_0_0"))  # a new stub
    write_proc(tmp_path, 10, (), state="Z", exit_status=9)
    children = watch.children()
    assert [(c.pid, c.dead) for c in children] == [(10, True), (11, False)]
    assert sorted(read) == ["10", "11"]  # 13 and 14 are not read again
    read.clear()
    for entry in (tmp_path / "14").iterdir():  # 14 ends, and its number is reused by a child
        entry.unlink()
    (tmp_path / "14").rmdir()
    assert [c.pid for c in watch.children()] == [10, 11]
    write_proc(tmp_path, 14, stub_argv("echo", "echo_0"))
    read.clear()
    assert [c.pid for c in watch.children()] == [10, 11, 14]
    assert sorted(read) == ["10", "11", "14"]  # 14 was forgotten when it left the listing
    read.clear()
    assert [c.pid for c in watch.children()] == [10, 11, 14]  # the 5th look reads all again
    assert sorted(read) == ["10", "11", "13", "14"]
    assert watch.children() == child_processes(SERVER, tmp_path)


@pytest.mark.parametrize(
    ("status", "text"),
    [(9, "SIGKILL"), (11, "SIGSEGV"), (11 | 0x80, "SIGSEGV, core dumped"), (256, "exit code 1")],
)
def test_describe_exit(status: int, text: str) -> None:
    assert describe_exit(status) == text


def test_describe_exit_and_returncode_in_words() -> None:
    assert describe_exit(None) == "unknown cause"
    assert describe_returncode(-9) == "killed by SIGKILL"
    assert describe_returncode(3) == "exit code 3"


# ----------------------------------------------------------------------------- lines
def test_console_lines() -> None:
    assert (
        death_line("dbl", "dbl_0", "SIGKILL", 0, 1) == "[dbl] stub dbl_0 died (SIGKILL); reloading"
    )
    assert death_line("dbl", "dbl_0", "SIGSEGV", 4, 6) == (
        "[dbl] stub dbl_0 died (SIGSEGV), 6 deaths in the last minute; reloading in 4 s"
    )
    assert reloaded_line("dbl", 1.234) == "[dbl] reloaded in 1.2 s"
    assert reload_failed_line("dbl", "load failed: ImportError\ntraceback", 2) == (
        "[dbl] reload failed: load failed: ImportError; retrying in 2 s"
    )


def test_server_command_explicit_mode_loads_every_model() -> None:
    args = server_command("ts", repository="r", backends="b", host="h", ports=(1, 2, 3))
    assert "--model-control-mode=explicit" not in args
    explicit = server_command(
        "ts", repository="r", backends="b", host="h", ports=(1, 2, 3), explicit=True
    )
    assert explicit[-2:] == ["--model-control-mode=explicit", "--load-model=*"]


# ------------------------------------------------------------------ healer on a fake /proc
class FakeReload:
    def __init__(self, fail: int = 0) -> None:
        self.calls: List[str] = []
        self.fail = fail
        self.done = threading.Event()

    def __call__(self, model: str) -> None:
        self.calls.append(model)
        if len(self.calls) <= self.fail:
            raise RuntimeError("failed to load 'dbl': ImportError")
        self.done.set()


def die(root: Path, healer: StubHealer, pid: int, status: int) -> None:
    """Stub ``pid`` becomes a zombie that stays for two looks: a death the healer handles."""
    write_proc(root, pid, (), state="Z", exit_status=status)
    healer.scan()
    healer.scan()


def healer_on(root: Path, reload: FakeReload, lines: List[str]) -> StubHealer:
    clock = iter(float(t) for t in range(1000))
    return StubHealer(
        SERVER,
        "http://unused",
        report=lines.append,
        reload=reload,
        proc_root=root,
        clock=lambda: next(clock),
        policy=lambda: Backoff(first=0.01, cap=0.01),
    )


def test_a_zombie_stub_that_stays_is_a_death_and_its_model_is_reloaded(tmp_path: Path) -> None:
    write_proc(tmp_path, 10, stub_argv("dbl", "dbl_0"))
    write_proc(tmp_path, 11, stub_argv("add_sub", "add_sub_0_0"))
    reload, lines = FakeReload(), cast(List[str], [])
    healer = healer_on(tmp_path, reload, lines)
    assert [s.model for s in healer.scan() + healer.stubs] == ["dbl", "add_sub"]
    write_proc(tmp_path, 10, (), state="Z", exit_status=9)
    assert healer.scan() == []  # first look: maybe Triton is ending it
    died = healer.scan()
    assert [(s.model, s.instance) for s in died] == [("dbl", "dbl_0")]
    assert reload.done.wait(5)
    healer.stop()
    assert reload.calls == ["dbl"]
    assert lines[0] == "[dbl] stub dbl_0 died (SIGKILL); reloading"
    assert lines[1].startswith("[dbl] reloaded in ")
    assert [e.kind for e in healer.events] == ["died", "reloaded"]


def test_a_stub_that_triton_ended_and_reaped_is_no_death(tmp_path: Path) -> None:
    write_proc(tmp_path, 10, stub_argv("dbl", "dbl_0"))
    reload, lines = FakeReload(), cast(List[str], [])
    healer = healer_on(tmp_path, reload, lines)
    healer.scan()
    (tmp_path / "10" / "stat").unlink()  # gone without a zombie: reaped by Triton (unload)
    assert healer.scan() == [] and healer.scan() == []
    assert reload.calls == [] and lines == [] and healer.stubs == []


def test_a_refused_reload_is_reported_and_retried_after_a_pause(tmp_path: Path) -> None:
    write_proc(tmp_path, 10, stub_argv("dbl", "dbl_0"))
    reload, lines = FakeReload(fail=1), cast(List[str], [])
    healer = healer_on(tmp_path, reload, lines)
    healer.scan()
    die(tmp_path, healer, 10, 11)
    assert reload.done.wait(5)
    healer.stop()
    assert reload.calls == ["dbl", "dbl"]
    failed = [line for line in lines if "reload failed" in line]
    assert failed == ["[dbl] reload failed: failed to load 'dbl': ImportError; retrying in 1 s"]
    assert lines[-1].startswith("[dbl] reloaded in ")


def test_a_death_while_the_last_reload_is_ending_is_healed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that has decided to end is still an alive thread for a moment. A stub killed in
    # that moment must start a new reload: simulated by threads that never look finished.
    alive = threading.Thread.is_alive
    monkeypatch.setattr(
        threading.Thread,
        "is_alive",
        lambda self: self.name.startswith("tritonpy-heal-dbl") or alive(self),
    )
    write_proc(tmp_path, 10, stub_argv("dbl", "dbl_0"))
    reload, lines = FakeReload(), cast(List[str], [])
    healer = healer_on(tmp_path, reload, lines)
    healer.scan()
    die(tmp_path, healer, 10, 9)
    assert reload.done.wait(5)
    first = healer._workers.get("dbl")
    if first is not None:  # let the first worker end (is_alive would still say it runs)
        first.join(5)
    reload.done.clear()
    write_proc(tmp_path, 12, stub_argv("dbl", "dbl_0"))  # the reloaded instance
    healer.scan()
    die(tmp_path, healer, 12, 11)
    assert reload.done.wait(5), f"the second death was not healed: {lines}"
    healer.stop()
    assert reload.calls == ["dbl", "dbl"]
    assert [e.kind for e in healer.events] == ["died", "reloaded", "died", "reloaded"]


# ------------------------------------------------------------------ server death (keeper)
class FakeServer:
    """What serve_until_exit uses of a TritonServer: it dies with ``codes`` in turn; starts
    fail while ``start_failures`` lasts."""

    def __init__(
        self,
        codes: List[int],
        start_failures: int = 0,
        tail: str = "E0101 tritonserver.cc:1] out of memory",
    ) -> None:
        self.codes = codes
        self.start_failures = start_failures
        self.tail = tail
        self.pid: Optional[int] = 100
        self.returncode: Optional[int] = None
        self.calls: List[str] = []

    @property
    def running(self) -> bool:
        return self.pid is not None and self.returncode is None

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        if not self.codes:  # runs until stopped
            time.sleep(timeout or 0)
            return None
        self.returncode = self.codes.pop(0)
        return self.returncode

    def log_tail(self, n: int) -> str:
        return self.tail

    def stop(self) -> None:
        self.calls.append("stop")
        self.pid = None

    def keep_ports(self) -> None:
        self.calls.append("keep_ports")

    def start(self) -> None:
        self.calls.append("start")
        if self.start_failures:
            self.start_failures -= 1
            raise ServerError("port 8000 is busy")
        self.pid = 101


def test_a_dead_server_without_restart_ends_with_signal_and_log_tail() -> None:
    fake = FakeServer([-9])
    lines: List[str] = []
    ended = serve_until_exit(cast(TritonServer, fake), report=lines.append)
    assert ended.returncode == -9 and ended.restarts == 0 and lines == []
    assert ended.reason == (
        "tritonserver (pid 100) was killed by SIGKILL; the end of its log:\n"
        "E0101 tritonserver.cc:1] out of memory"
    )
    assert fake.calls == ["stop"]


def test_restart_backs_off_counts_failed_starts_and_gives_up() -> None:
    fake = FakeServer([-9, 1, -11], start_failures=1)
    lines: List[str] = []
    slept: List[float] = []
    clock = iter(float(t) for t in range(100))
    budget = Backoff(free=0, window=600, first=1, cap=30, give_up_after=4)
    ended = serve_until_exit(
        cast(TritonServer, fake),
        restart=True,
        report=lines.append,
        budget=budget,
        sleep=slept.append,
        clock=lambda: next(clock),
    )
    assert slept == [1, 2, 4]
    assert (
        lines
        == [
            "[server] tritonserver (pid 100) was killed by SIGKILL; restarting in 1 s",
            "[server] the restart failed: port 8000 is busy; restarting in 2 s",
            "[server] restarted (pid 101, restart 1)",
            "[server] tritonserver (pid 101) exited with exit code 1; restarting in 4 s",
            "[server] restarted (pid 101, restart 2)",
        ][: len(lines)]
    )
    assert ended.restarts == 2
    assert ended.returncode == -11
    assert ended.reason.startswith("tritonserver (pid 101) was killed by SIGSEGV")
    assert ended.reason.endswith("gave up restarting: 4 deaths within 600 s")


LOCK_CRASH_TAIL = """I1206 01:48:01.113836 29708 model_lifecycle.cc:839] "successfully loaded 'dbl'"
terminate called after throwing an instance of 'boost::interprocess::lock_exception'
  what():  boost::interprocess::lock_exception
Signal (6) received.
 0# 0x000055B45CA8752D in tritonserver"""


def test_the_known_lock_crash_is_named_with_its_remedy() -> None:
    fake = FakeServer([-6], tail=LOCK_CRASH_TAIL)
    ended = serve_until_exit(cast(TritonServer, fake), report=[].append)
    headline, _, rest = ended.reason.partition("\n")
    assert headline == (
        "tritonserver (pid 100) was killed by SIGABRT: the Python backend aborted on a "
        "shared-memory lock held by a stub process that had died (a known Triton crash, "
        "triton-inference-server/server#8882); the end of its log:"
    )
    assert rest.startswith(LOCK_CRASH_TAIL)
    assert ended.reason.endswith(
        "nothing in the model causes it: start the server again (`tritonpy serve --restart` "
        "does so by itself; under Kubernetes the pod's restart policy does)"
    )
    assert known_crash("E0101 out of memory") is None
    assert known_crash(LOCK_CRASH_TAIL) is LOCK_EXCEPTION


def test_a_restart_after_the_lock_crash_says_its_cause() -> None:
    fake = FakeServer([-6, -9], tail=LOCK_CRASH_TAIL)
    lines: List[str] = []
    budget = Backoff(free=0, window=600, first=1, give_up_after=2)
    serve_until_exit(
        cast(TritonServer, fake), restart=True, report=lines.append, budget=budget, sleep=[].append
    )
    assert lines[0] == (
        "[server] tritonserver (pid 100) was killed by SIGABRT: the Python backend aborted on a "
        "shared-memory lock held by a stub process that had died (a known Triton crash, "
        "triton-inference-server/server#8882); restarting in 1 s"
    )


def test_serving_from_a_thread_ends_when_stop_is_set() -> None:
    fake = FakeServer([])
    stop = threading.Event()
    ended: List[ServerExit] = []
    thread = threading.Thread(
        target=lambda: ended.append(
            serve_until_exit(cast(TritonServer, fake), restart=True, report=[].append, stop=stop)
        )
    )
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive() and fake.calls == []
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert ended[0].reason == "stopped on request" and ended[0].restarts == 0
    assert fake.calls == ["stop"]


def test_serve_flags_parse() -> None:
    args = build_parser().parse_args(["serve", "repo", "--no-heal", "--restart"])
    assert args.heal is False and args.restart  # --no-heal sets ServerOptions.heal
    default = build_parser().parse_args(["serve", "repo"])
    assert default.heal is True and not default.restart


# --------------------------------------------------- stopping a server stuck on dead stubs
_STUCK_SERVER = """
import os, signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)   # a server that keeps waiting on SIGINT
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ... and on SIGTERM, like Triton's shutdown
if os.fork() == 0:
    os._exit(0)                                # a zombie: never reaped by its parent
print("ready", flush=True)
time.sleep(60)
"""


def test_a_server_left_with_only_dead_stubs_is_killed_without_waiting() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _STUCK_SERVER, "dead"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    with ThreadPoolExecutor(1) as pool:
        ending = pool.submit(end_process_group, proc, 120.0)
        # only a dead stub left: killed at once instead of waiting the 120 s grace
        assert ending.result(timeout=60) == []
    assert proc.returncode == -signal.SIGKILL
    proc.stdout.close()
