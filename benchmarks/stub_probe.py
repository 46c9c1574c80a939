"""Where the time goes inside the real stub: ``execute()`` of the hand-written and the
tritonpy model of one workload, timed on the same real ``pb_utils.InferenceRequest``.

A probe model (``<workload>_probe``, the workload's raw configuration) holds one instance of
each variant. When it gets a request it calls each variant's ``execute([request])`` ``--calls``
times, alternating in rounds so drift favours neither, writes the microseconds per call
(minimum and median of the rounds) and, with ``--profile``, a cProfile of the tritonpy calls,
to a JSON file, then answers the request with the raw model's response. Nothing else runs in
that stub, so the figure is the per-request cost of the Python code, not of the server.

    python benchmarks/stub_probe.py                         # add_sub, 3,000 calls per variant
    python benchmarks/stub_probe.py --workload image_preprocess --calls 200 --profile
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.loadgen import grpc_infer_once
from benchmarks.workloads import _SIMPLE, MODELS_DIR, _raw_config

__all__ = ["PROBE_MODEL", "main", "run_probe"]

ROOT = Path(__file__).resolve().parent.parent

#: the probe model's code: imports the two variants from files beside it
PROBE_MODEL = '''
import cProfile, io, json, pstats, statistics, time
import importlib.util, os

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TritonPythonModel


def _load_baseline(path, args):
    """The tritonpy variant again, on the tritonpy copy in ``path`` (an older commit): its
    modules are imported under their usual names, then the current ones are put back."""
    import sys

    current = {k: v for k, v in sys.modules.items() if k == "tritonpy" or k.startswith("tritonpy.")}
    for key in current:
        del sys.modules[key]
    sys.path.insert(0, path)
    try:
        model = _load("variant_tritonpy")()
        model.initialize(args)
    finally:
        sys.path.remove(path)
        for key in [k for k in sys.modules if k == "tritonpy" or k.startswith("tritonpy.")]:
            del sys.modules[key]
        sys.modules.update(current)
    return model


def _primitives(request, calls=2000):
    """Microseconds per call of the pb_utils calls every execute() makes."""
    import numpy as np
    import triton_python_backend_utils as pb_utils

    tensor = request.inputs()[0]
    array = tensor.as_numpy()
    out = pb_utils.Tensor("OUT", array)
    cases = {
        "request.inputs()": request.inputs,
        "tensor.name()": tensor.name,
        "tensor.as_numpy()": tensor.as_numpy,
        "request.requested_output_names()": request.requested_output_names,
        "pb_utils.Tensor(name, array)": lambda: pb_utils.Tensor("OUT", array),
        "pb_utils.InferenceResponse([tensor])": lambda: pb_utils.InferenceResponse(
            output_tensors=[out]
        ),
        "time.perf_counter()": time.perf_counter,
        "np.ascontiguousarray(array)": lambda: np.ascontiguousarray(array),
    }
    result = {}
    for name, call in cases.items():
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls // 5):
                call()
            best = min(best, (time.perf_counter() - start) * 1e6 / (calls // 5))
        result[name] = best
    return result


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.out = params["probe_output"]["string_value"]
        self.calls = int(params["probe_calls"]["string_value"])
        self.profile = params["probe_profile"]["string_value"] == "1"
        self.variants = {}
        for name in ("raw", "tritonpy"):
            model = _load("variant_" + name)()
            model.initialize(args)
            self.variants[name] = model
        baseline = os.path.join(HERE, "baseline")
        if os.path.isdir(baseline):
            self.variants["baseline"] = _load_baseline(baseline, args)

    def execute(self, requests):
        rounds = 40
        per_round = max(1, self.calls // rounds)
        samples = {name: [] for name in self.variants}
        for index in range(rounds + 1):  # round 0 warms up
            order = list(self.variants) if index % 2 == 0 else list(self.variants)[::-1]
            for name in order:
                execute = self.variants[name].execute
                start = time.perf_counter()
                for _ in range(per_round):
                    execute(requests)
                elapsed = time.perf_counter() - start
                if index:
                    samples[name].append(elapsed * 1e6 / per_round)
        report = {
            name: {"min_us": min(values), "median_us": statistics.median(values)}
            for name, values in samples.items()
        }
        report["primitives"] = _primitives(requests[0])
        if self.profile:
            profiler = cProfile.Profile()
            execute = self.variants["tritonpy"].execute
            profiler.enable()
            for _ in range(per_round):
                execute(requests)
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
            report["profile"] = text.getvalue()
        with open(self.out, "w") as handle:
            json.dump(report, handle)
        return self.variants["raw"].execute(requests)
'''


def build_probe(
    repo: Path,
    workload: str,
    output: Path,
    calls: int,
    profile: bool,
    baseline: Optional[str] = None,
) -> str:
    """Write ``<workload>_probe`` into ``repo``; return its name. ``baseline``: a git commit
    whose tritonpy is timed too (its package is extracted beside the probe)."""
    _, max_batch_size, (inputs, outputs), _, _ = _SIMPLE[workload]
    name = f"{workload}_probe"
    version = repo / name / "1"
    version.mkdir(parents=True, exist_ok=True)
    (version / "model.py").write_text(PROBE_MODEL, encoding="utf-8")
    for variant in ("raw", "tritonpy"):
        shutil.copyfile(MODELS_DIR / f"{workload}_{variant}.py", version / f"variant_{variant}.py")
    if baseline:
        archive = subprocess.run(
            ["git", "archive", baseline, "tritonpy"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(version / "baseline")
    parameters = "".join(
        f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}\n'
        for key, value in (
            ("probe_output", output),
            ("probe_calls", calls),
            ("probe_profile", int(profile)),
        )
    )
    config = _raw_config(name, max_batch_size, inputs, outputs, extra=parameters)
    (repo / name / "config.pbtxt").write_text(config, encoding="utf-8")
    return name


def run_probe(
    workload: str = "add_sub",
    calls: int = 3000,
    profile: bool = False,
    baseline: Optional[str] = None,
) -> Any:
    """Start a server with the probe of ``workload``, send it one request, return the report
    (``{"raw": {"min_us", "median_us"}, "tritonpy": {...}, "profile": text}``)."""
    from tritonpy.server import TritonServer

    _, _, _, _, payloads = _SIMPLE[workload]
    with tempfile.TemporaryDirectory(prefix="tritonpy-probe-") as tmp:
        repo, output = Path(tmp) / "repo", Path(tmp) / "probe.json"
        name = build_probe(repo, workload, output, calls, profile, baseline)
        with TritonServer(repo, startup_timeout=300.0) as server:
            grpc_infer_once(server.grpc_url, name, payloads()[0])
        return json.loads(output.read_text(encoding="utf-8"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="add_sub", choices=sorted(_SIMPLE))
    parser.add_argument("--calls", type=int, default=3000, help="calls per variant")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of tritonpy")
    parser.add_argument(
        "--baseline", metavar="COMMIT", help="also time the tritonpy of this git commit"
    )
    args = parser.parse_args(argv)
    report: Dict[str, Any] = run_probe(args.workload, args.calls, args.profile, args.baseline)
    for variant in ("raw", "tritonpy", "baseline"):
        if variant not in report:
            continue
        figures = report[variant]
        print(
            f"{args.workload} {variant:<9} execute(): {figures['min_us']:8.1f} us min, "
            f"{figures['median_us']:8.1f} us median per request"
        )
    for name, micros in report.get("primitives", {}).items():
        print(f"  {name:<40} {micros:6.2f} us")
    gap = report["tritonpy"]["min_us"] - report["raw"]["min_us"]
    print(f"tritonpy - raw: {gap:+.1f} us per request (min of rounds)")
    if "baseline" in report:
        gap = report["baseline"]["min_us"] - report["raw"]["min_us"]
        print(f"baseline ({args.baseline}) - raw: {gap:+.1f} us per request (min of rounds)")
    if "profile" in report:
        print(report["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
