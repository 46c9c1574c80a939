"""``tritonpy tune`` on models whose answer physics knows, in the real tritonserver.

- ``sleep_4ms`` sleeps 4 ms per request and cannot batch: a second instance doubles what one
  serves (sleeping takes no CPU), so tune must find instances=2 and state a gain near 2x. Its
  confirmation once measured the winner twice under the name "default" (a load without a
  configuration after an override keeps the override) and stated 1.01x.
- ``sleep_locked`` holds one lock shared by its instances for 40 ms of each request: a second
  instance cannot help beyond the noise, so tune must say so and write nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Tuple

from tritonpy._tooling.pbtxt import load_config
from tritonpy.perf._tune import TuneResult, tune, write_best

MODELS = Path(__file__).parent / "tune_models"
SWEEP = dict(max_minutes=2.0, concurrency=(4,), warmup=0.3, engine="builtin", cores=2)


def _tuned(tmp_path: Path, name: str, duration: float) -> Tuple[Path, TuneResult]:
    model = tmp_path / "repo" / name
    shutil.copytree(MODELS / name, model)
    return model, tune(model, latency_budget_ms=1000.0, duration=duration, **SWEEP)


def test_tune_finds_the_second_instance_of_a_sleeping_model(tmp_path: Path) -> None:
    model, result = _tuned(tmp_path, "sleep_4ms", 1.0)
    assert [t.error for t in result.trials] == [""] * len(result.trials)
    best = result.best
    assert best is not None and best.candidate.instances == 2, result.table()
    assert result.confirmation is not None, result.table()
    default_again = result.confirmation[0]
    # one instance of a 4 ms model serves at most 250 infer/s: the default measured again is
    # one instance, not the winner under another name
    assert default_again.score < 260.0, result.table()
    assert result.gain is not None and 1.5 <= result.gain <= 2.2, result.table()
    assert result.holds, result.table()
    assert write_best(result, model) == model / "config.pbtxt"
    assert [g.count for g in load_config(model / "config.pbtxt").instance_group] == [2]


def test_tune_writes_nothing_when_more_instances_cannot_help(tmp_path: Path) -> None:
    model, result = _tuned(tmp_path, "sleep_locked", 2.0)  # 50 requests a run at 25/s
    before = (model / "config.pbtxt").read_text()
    assert [t.error for t in result.trials] == [""] * len(result.trials)
    if result.best is not result.default:
        assert result.confirmation is not None, result.table()
        assert not result.holds, result.table()
        assert "nothing to write" in result.table()
    assert write_best(result, model) is None
    assert (model / "config.pbtxt").read_text() == before
