"""benchmarks/cpu_split.py's pieces without a server: the /proc parsers, the rotation of the
variants, the pooled ratio with its interval, the table, an ablation variant's model, and
execute()'s per-round difference from raw with its interval (benchmarks/execute_rounds.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.cpu_split import (  # noqa: E402
    COUNTERS,
    SERVER,
    Totals,
    add_variant,
    parse_schedstat,
    parse_stat,
    parse_status,
    pooled,
    read_process,
    render,
    round_orders,
)
from benchmarks.workloads import Workload  # noqa: E402

# a /proc/<pid>/stat line whose command has a space and a parenthesis in it
STAT = "123 (triton (stub) b) S 1 2 3 0 -1 4194304 57 0 0 0 250 30 0 0 20 0 5 0 100 0 0"


def test_parse_stat_reads_user_system_and_faults_after_the_command() -> None:
    user, system, faults = parse_stat(STAT, tick=100)
    assert (user, system, faults) == (2_500_000.0, 300_000.0, 57.0)


def test_parse_status_and_schedstat() -> None:
    status = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n"
    assert parse_status(status) == (12.0, 3.0)
    assert parse_schedstat("52814994 105292166 193\n") == pytest.approx(52814.994)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux /proc only")
def test_read_process_reads_this_process() -> None:
    import os

    counters = read_process(os.getpid(), os.sysconf("SC_CLK_TCK"))
    assert set(counters) == set(COUNTERS)
    assert counters["cpu_us"] > 0 and counters["voluntary"] >= 0


def test_round_orders_put_every_variant_in_every_place() -> None:
    orders = round_orders(["a", "b", "c"], 6)
    assert orders[:3] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert orders[3] == ["c", "b", "a"]  # reversed in the second cycle
    for place in range(3):
        assert {order[place] for order in orders} == {"a", "b", "c"}
    assert all(sorted(order) == ["a", "b", "c"] for order in orders)


def test_pooled_adds_rounds_up_before_dividing() -> None:
    # rows: (requests, tritonserver us, stubs us); the variant costs 10 % more in its stubs
    raws = [(100, 1000.0, 500.0), (300, 3000.0, 1500.0)]
    mine = [(100, 1000.0, 550.0), (300, 3000.0, 1650.0)]
    ratio, low, high = pooled(mine, raws, part=2)
    assert ratio == pytest.approx(1.1) and low == pytest.approx(1.1) and high == pytest.approx(1.1)
    both, _, _ = pooled(mine, raws, part=0)
    assert both == pytest.approx(6200 / 6000)
    assert pooled(mine, raws, part=1)[0] == pytest.approx(1.0)


def test_pooled_interval_widens_with_noisy_rounds() -> None:
    raws = [(100, 100.0, 100.0)] * 8
    mine = [(100, 100.0, value) for value in (90.0, 110.0, 95.0, 105.0, 100.0, 80.0, 120.0, 100.0)]
    ratio, low, high = pooled(mine, raws, part=2)
    assert ratio == pytest.approx(1.0)
    assert low < 1.0 < high
    assert pooled([], [], part=0)[0] != pooled([], [], part=0)[0]  # nan without rounds


def _totals(stub: str, stub_us: float) -> Totals:
    total = Totals(requests=100, seconds=0.5)
    total.processes[SERVER] = dict.fromkeys(COUNTERS, 0.0) | {"cpu_us": 20000.0}
    total.processes[stub] = dict.fromkeys(COUNTERS, 0.0) | {"cpu_us": stub_us}
    total.threads = {"tritonserver": 19000.0, "default-executo": 1000.0}
    total.extra["execute"] = {stub: [3_000_000, 100, 0, 0]}
    total.rounds = [(100, 20000.0, stub_us)]
    return total


def test_render_splits_server_and_stub_and_gives_the_ratios() -> None:
    text = render(
        {"raw": _totals("m_raw", 10000.0), "tritonpy": _totals("m_tp", 11000.0)}, "add_sub", 1
    )
    assert "add_sub, c=1" in text
    assert "server CPU   300.0 us = tritonserver  200.0 + stubs  100.0" in text
    assert "server CPU   310.0 us = tritonserver  200.0 + stubs  110.0" in text
    assert "execute   30.0" in text
    assert "tritonserver threads: tritonserver 190.0, default-executo 10.0" in text
    assert "tritonpy  server CPU 1.033x" in text and "stubs 1.100x" in text


def test_add_variant_copies_the_model_with_the_configuration_of_another(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "add_sub_tritonpy" / "1").mkdir(parents=True)
    (repo / "add_sub_tritonpy" / "config.pbtxt").write_text(
        'name: "add_sub_tritonpy"\nbackend: "python"\n', encoding="utf-8"
    )
    model = tmp_path / "variant.py"
    model.write_text("# the ablation\n", encoding="utf-8")
    workload = Workload("add_sub", "", {"tritonpy": "add_sub_tritonpy"}, [])
    assert add_variant(repo, workload, f"nomalloc=tritonpy:{model}") == "add_sub_nomalloc"
    assert workload.models["nomalloc"] == "add_sub_nomalloc"
    config = (repo / "add_sub_nomalloc" / "config.pbtxt").read_text(encoding="utf-8")
    assert config.startswith('name: "add_sub_nomalloc"')
    assert (repo / "add_sub_nomalloc" / "1" / "model.py").read_text() == "# the ablation\n"
    with pytest.raises(SystemExit):
        add_variant(repo, workload, f"x=nosuch:{model}")


def test_the_wrappers_count_what_the_stub_calls_on_the_instance(tmp_path: Path) -> None:
    import gc
    import importlib.util

    from benchmarks.cpu_split import add_gc_counter, read_gc, wrap_execute
    from benchmarks.stub_load import read_execute_cpu

    version = tmp_path / "repo" / "m" / "1"
    version.mkdir(parents=True)
    (version / "model.py").write_text(
        "class TritonPythonModel:\n"
        "    def initialize(self, args):\n"
        "        self.execute = self.bound  # as tritonpy binds its engine's execute\n"
        "    def bound(self, requests):\n"
        "        return [r * 2 for r in requests]\n",
        encoding="utf-8",
    )
    wrap_execute(tmp_path / "repo")
    add_gc_counter(tmp_path / "repo")
    spec = importlib.util.spec_from_file_location("m_model", version / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    callbacks = list(gc.callbacks)
    try:
        spec.loader.exec_module(module)
    finally:
        gc.callbacks[:] = callbacks  # (the counter stays out of this process)
    model = module.TritonPythonModel()
    model.initialize({})
    assert model.execute([1]) == [2] and model.execute([1, 2, 3]) == [2, 4, 6]
    ns_alone, alone, ns_merged, merged = read_execute_cpu(tmp_path / "repo", "m") or []
    assert (alone, merged) == (1, 3) and ns_alone >= 0 and ns_merged >= 0
    assert read_gc(tmp_path / "repo", "m") is not None
    assert read_gc(tmp_path / "repo", "absent") is None


def test_the_load_sends_whole_sequences_with_ids_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tritonclient.grpc import service_pb2

    import benchmarks.loadgen
    from benchmarks.cpu_split import _Load

    sent: list = []

    class Channel:
        def ModelInfer(self, request: object, timeout: float) -> None:
            params = request.parameters  # type: ignore[attr-defined]
            sent.append(
                (
                    params["sequence_id"].int64_param,
                    params["sequence_start"].bool_param,
                    params["sequence_end"].bool_param,
                )
            )

    monkeypatch.setattr(benchmarks.loadgen, "_stub", lambda url: Channel())
    load = _Load("localhost:1", concurrency=2, sequence_length=4)
    try:
        assert load.sent(6) == 8  # rounded up to whole sequences
        load.window(service_pb2.ModelInferRequest(model_name="m"), 6)
        load.window(service_pb2.ModelInferRequest(model_name="m"), 4)
    finally:
        load.close()
    assert len(sent) == 2 * (8 + 4)
    by_id: dict = {}
    for sequence_id, start, end in sent:
        by_id.setdefault(sequence_id, []).append((start, end))
    assert len(by_id) == 6  # 2 threads x (2 + 1) sequences, no id shared or reused
    for flags in by_id.values():
        assert flags == [(True, False), (False, False), (False, False), (False, True)]


def test_the_load_keeps_a_stream_per_thread_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # a decoupled model's load (--workload stream): each thread opens one stream per model on
    # its first window of it, sends the window's requests over it and closes it at the end
    import benchmarks.loadgen
    from benchmarks.cpu_split import _Load

    opened: list = []

    class Sender:
        def __init__(self, model: str) -> None:
            self.model, self.sent, self.closed = model, 0, False
            opened.append(self)

        def send(self, position: int) -> None:
            assert position == 0 and not self.closed
            self.sent += 1

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(benchmarks.loadgen, "_stub", lambda url: None)
    load = _Load("localhost:1", concurrency=2, streams=Sender)
    try:
        load.window("m_raw", 3)
        load.window("m_tp", 2)
        load.window("m_raw", 4)
    finally:
        load.close()
    assert sorted((s.model, s.sent) for s in opened) == [
        ("m_raw", 7), ("m_raw", 7), ("m_tp", 2), ("m_tp", 2)
    ]  # fmt: skip
    assert all(s.closed for s in opened)


def test_execute_rounds_docstring_example_holds() -> None:
    import doctest

    from benchmarks import execute_rounds

    result = doctest.testmod(execute_rounds)
    assert result.failed == 0 and result.attempted > 0


def test_a_round_row_adds_calls_alone_and_merged_over_the_variants_stubs() -> None:
    from benchmarks.execute_rounds import round_row

    # (ns, requests alone, ns, requests merged) per stub: an ensemble's two stubs
    assert round_row([[1000, 2, 500, 3], [4000, 5, 0, 0]]) == (5500, 10)
    assert round_row([[1000, 2, 0, 0], None]) is None  # a stub without its counter


def test_execute_difference_is_pooled_then_paired_and_skips_missing_rounds() -> None:
    from benchmarks.execute_rounds import pooled_difference

    # rounds of different sizes: the pooled means, not the mean of the rounds' differences
    raw = [(1_000_000, 100), (9_000_000, 300)]  # 10 us, then 30 us a request: pooled 25 us
    mine = [(1_200_000, 100), (9_300_000, 300)]  # 12 and 31: pooled 26.25 us
    mid, low, high = pooled_difference(mine, raw)
    assert mid == pytest.approx(1.25)
    assert low <= mid <= high
    # a round either side lacks is left out of both
    mid, _, _ = pooled_difference([None, (3_100_000, 100)], [(1_000_000, 100), (3_000_000, 100)])
    assert mid == pytest.approx(1.0)
    assert pooled_difference([None], [None])[0] != pooled_difference([None], [None])[0]


def test_execute_difference_interval_holds_zero_for_noise_and_not_for_a_shift() -> None:
    from benchmarks.execute_rounds import pooled_difference

    noise = [-3, 2, 1, -1, 3, -2, 0, 1, -1, 2, -3, 1]
    raw = [(30_000 * 100, 100)] * len(noise)
    same = [((30_000 + n * 100) * 100, 100) for n in noise]  # +-0.3 us, centred on 0
    _, low, high = pooled_difference(same, raw)
    assert low < 0 < high
    shifted = [((32_000 + n * 100) * 100, 100) for n in noise]  # +2 us
    mid, low, high = pooled_difference(shifted, raw)
    assert mid == pytest.approx(2.0, abs=0.05) and 1.5 < low <= high < 2.5


def test_render_prints_execute_differences_only_with_their_rounds() -> None:
    raw, tritonpy = _totals("m_raw", 10000.0), _totals("m_tp", 11000.0)
    assert "execute() us per request" not in render({"raw": raw, "tritonpy": tritonpy}, "a", 1)
    raw.execute_rounds = [(3_000_000, 100), (3_000_000, 100)]
    tritonpy.execute_rounds = [(3_400_000, 100), (3_400_000, 100)]
    text = render({"raw": raw, "tritonpy": tritonpy}, "add_sub", 1)
    assert "execute() us per request over raw's, pooled over the rounds (90 % interval)" in text
    assert "tritonpy      +4.00 us (+4.00 to +4.00; 2 rounds)" in text


def test_render_prints_execute_differences_against_a_named_variant_too() -> None:
    raw, checked, tritonpy = (_totals(f"m_{n}", 10000.0) for n in ("raw", "checked", "tp"))
    raw.execute_rounds = [(3_000_000, 100)] * 3
    checked.execute_rounds = [(3_300_000, 100)] * 3
    tritonpy.execute_rounds = [(3_500_000, 100)] * 3
    text = render({"raw": raw, "checked": checked, "tritonpy": tritonpy}, "a", 1, ["checked"])
    over_checked = text.split("over checked's")[1]
    assert "tritonpy      +2.00 us" in over_checked and "raw           -3.00 us" in over_checked


def test_against_needs_execute_cpu_and_runs_at_least_one() -> None:
    from benchmarks.cpu_split import main

    with pytest.raises(SystemExit):
        main(["--against", "checked"])
    with pytest.raises(SystemExit):
        main(["--runs", "0"])


def test_across_runs_is_the_mean_with_a_t_interval() -> None:
    from benchmarks.execute_rounds import across_runs

    mean, low, high = across_runs([2.0, -1.0, 4.0])
    assert mean == pytest.approx(5 / 3)
    # sd 2.517, t(2) 4.303: half-width 4.303 * 2.517 / sqrt(3)
    assert high - mean == pytest.approx(4.303 * 2.5166 / 3**0.5, rel=1e-3)
    assert mean - low == pytest.approx(high - mean)
    one = across_runs([2.0])
    assert one[0] == 2.0 and one[1] != one[1]  # no interval from one run


def test_runs_merge_into_one_table_and_give_execute_per_run() -> None:
    from benchmarks.cpu_split import merge_runs

    runs = []
    for shift in (1_000, 3_000):  # tritonpy +1 us in the first run, +3 us in the second
        raw, tritonpy = _totals("m_raw", 10000.0), _totals("m_tp", 11000.0)
        raw.execute_rounds = [(3_000_000, 100)] * 2
        tritonpy.execute_rounds = [(3_000_000 + shift * 100, 100)] * 2
        runs.append({"raw": raw, "tritonpy": tritonpy})
    merged = merge_runs(runs)
    assert merged["raw"].requests == 200 and len(merged["raw"].rounds) == 2
    assert merged["tritonpy"].processes["m_tp"]["cpu_us"] == 22000.0
    assert merged["tritonpy"].extra["execute"]["m_tp"] == [6_000_000, 200, 0, 0]
    text = render(merged, "add_sub", 16, runs=runs)
    assert "server CPU   310.0 us" in text  # per request, over both runs
    assert (
        "each run's (pooled over its rounds), then their mean (95 % interval over the 2 runs)"
        in text
    )
    assert "tritonpy     +1.00  +3.00  mean  +2.00 us" in text
    # the CPU ratios too: per run, then over the runs (not the rounds of all runs pooled)
    assert "then per part the geometric mean (95 % interval over the 2 runs)" in text
    assert "pooled over the rounds (90 % interval)" not in text
    assert "tritonpy  1.033 1.033  server CPU 1.033x (1.033-1.033)" in text
    assert "stubs 1.100x (1.100-1.100)" in text


@pytest.mark.integration
def test_two_runs_end_to_end_give_execute_per_run_and_against_an_ablation() -> None:
    import subprocess

    checked = ROOT / "benchmarks" / "workloads" / "models" / "add_sub_checked.py"
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "cpu_split.py"),
        "--workload=add_sub",
        "--concurrency=2",
        "--requests=40",
        "--rounds=2",
        "--runs=2",
        "--execute-cpu",
        f"--extra=checked=raw:{checked}",
        "--against=checked",
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "run 2 of 2 measured" in proc.stderr
    out = proc.stdout
    assert "raw" in out and "(160 requests)" in out  # 2 runs x 2 rounds x 40 requests
    assert "then per part the geometric mean (95 % interval over the 2 runs)" in out
    over_raw, over_checked = out.split("execute() us per request over ")[1:]
    assert over_raw.startswith("raw's: each run's (pooled over its rounds)")
    assert over_checked.startswith("checked's: each run's")
    for variant in ("tritonpy", "control", "checked"):
        (line,) = [ln for ln in over_raw.splitlines() if ln.strip().startswith(variant + " ")]
        numbers = line.split()[1:3]  # one figure per run, then "mean"
        assert all(float(n) == float(n) for n in numbers) and line.split()[3] == "mean", line
    assert any(ln.strip().startswith("tritonpy ") for ln in over_checked.splitlines())
    # a variant --against names must exist, said before any load is sent
    wrong = subprocess.run(
        [*command[:2], "--workload=add_sub", "--execute-cpu", "--against=nosuch"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert wrong.returncode == 2 and "--against nosuch: not a variant" in wrong.stderr
