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
    python benchmarks/stub_probe.py --workload digits_postprocess --requests 4

``digits_preprocess``, ``digits_classifier`` and ``digits_postprocess`` are the members of the
ensemble workload (the templates against the hand-written members); ``--requests N`` hands
each ``execute()`` N copies of the request, as the dynamic batcher does under load.
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
from benchmarks.workloads import _SIMPLE, MODELS_DIR, _raw_config, build_repository

#: the ensemble's members, probed one at a time
MEMBERS = ("digits_preprocess", "digits_classifier", "digits_postprocess")

__all__ = ["PROBE_MODEL", "main", "run_probe"]

ROOT = Path(__file__).resolve().parent.parent

#: the probe model's code: imports the two variants from files beside it
PROBE_MODEL = '''
import cProfile, io, json, pstats, statistics, time
import importlib.util, os

import numpy as np

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
        self.copies = int(params["probe_requests"]["string_value"])
        evict = int(params.get("probe_evict_kb", {}).get("string_value", "0"))
        # written over before every timed call: the caches hold someone else's data, as in
        # a stub that the server and other stubs ran between its calls
        self.scratch = np.zeros(evict * 1024, np.uint8) if evict else None
        self.variants = {}
        for name in ("raw", "tritonpy"):
            model = _load("variant_" + name)()
            model.initialize(args)
            self.variants[name] = model
        baseline = os.path.join(HERE, "baseline")
        if os.path.isdir(baseline):
            self.variants["baseline"] = _load_baseline(baseline, args)

    def execute(self, received):
        requests = list(received) * self.copies
        rounds = 40
        per_round = max(1, self.calls // rounds)
        samples = {name: [] for name in self.variants}
        for index in range(rounds + 1):  # round 0 warms up
            order = list(self.variants) if index % 2 == 0 else list(self.variants)[::-1]
            for name in order:
                execute = self.variants[name].execute
                if self.scratch is None:
                    start = time.perf_counter()
                    for _ in range(per_round):
                        execute(requests)
                    elapsed = time.perf_counter() - start
                else:
                    elapsed = 0.0
                    for call in range(per_round):
                        self.scratch.fill(call & 255)
                        start = time.perf_counter()
                        execute(requests)
                        elapsed += time.perf_counter() - start
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
        return self.variants["raw"].execute(received)
'''


def build_probe(
    repo: Path,
    workload: str,
    output: Path,
    calls: int,
    profile: bool,
    baseline: Optional[str] = None,
    requests: int = 1,
    evict_kb: int = 0,
) -> str:
    """Write ``<workload>_probe`` into ``repo``; return its name. ``baseline``: a git commit
    whose tritonpy is timed too (its package is extracted beside the probe); ``requests``:
    copies of the request each ``execute()`` gets; ``evict_kb``: KB written over before each
    call (0: calls back to back)."""
    name = f"{workload}_probe"
    version = repo / name / "1"
    version.mkdir(parents=True, exist_ok=True)
    (version / "model.py").write_text(PROBE_MODEL, encoding="utf-8")
    parameters = {
        "probe_output": str(output),
        "probe_calls": str(calls),
        "probe_profile": str(int(profile)),
        "probe_requests": str(requests),
        "probe_evict_kb": str(evict_kb),
    }
    if workload in MEMBERS:
        config = _member_probe(repo, workload, name, parameters)
    else:
        _, max_batch_size, (inputs, outputs), _, _ = _SIMPLE[workload]
        for variant in ("raw", "tritonpy"):
            source = MODELS_DIR / f"{workload}_{variant}.py"
            shutil.copyfile(source, version / f"variant_{variant}.py")
        extra = "".join(
            f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}\n'
            for key, value in parameters.items()
        )
        config = _raw_config(name, max_batch_size, inputs, outputs, extra=extra)
    (repo / name / "config.pbtxt").write_text(config, encoding="utf-8")
    if baseline:
        archive = subprocess.run(
            ["git", "archive", baseline, "tritonpy"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(version / "baseline")
    return name


def _member_probe(repo: Path, workload: str, name: str, parameters: Dict[str, str]) -> str:
    """The probe of one ensemble member: both variants' code and files (weights, labels)
    beside it; the hand-written member's configuration with the template's parameters
    added."""
    from tritonpy.config import format_config, parse_config, set_parameter

    role = workload.split("_", 1)[1]
    source = repo.parent / "members"
    build_repository(source, ["ensemble"])
    members = {variant: source / f"ensemble_{variant}_{role}" for variant in ("raw", "tritonpy")}
    version = repo / name / "1"
    for variant, member in members.items():
        shutil.copyfile(member / "1" / "model.py", version / f"variant_{variant}.py")
        for path in member.rglob("*"):
            if path.is_file() and path.name not in ("model.py", "config.pbtxt"):
                inside = version if path.parent.name == "1" else repo / name
                shutil.copyfile(path, inside / path.name)
    config = parse_config((members["raw"] / "config.pbtxt").read_text(encoding="utf-8"))
    template = parse_config((members["tritonpy"] / "config.pbtxt").read_text(encoding="utf-8"))
    config.name = name
    for key, value in template.parameters.items():
        if key not in config.parameters:
            set_parameter(config, key, value.string_value)
    for key, value in parameters.items():
        set_parameter(config, key, value)
    return str(format_config(config))


def _member_payload(workload: str) -> Dict[str, Any]:
    """One request for an ensemble member: a held-out digit, 8x8 pixels or ten logits."""
    import numpy as np

    rng = np.random.default_rng(0)
    if workload == "digits_preprocess":
        from tritonpy.templates import digits_holdout

        images, _ = digits_holdout()
        return {"IMAGE": np.array([[images[0]]], dtype=object)}
    if workload == "digits_classifier":
        return {"PIXELS": rng.random((1, 1, 8, 8), dtype=np.float32)}
    return {"LOGITS": rng.random((1, 10), dtype=np.float32)}


def run_probe(
    workload: str = "add_sub",
    calls: int = 3000,
    profile: bool = False,
    baseline: Optional[str] = None,
    requests: int = 1,
    evict_kb: int = 0,
) -> Any:
    """Start a server with the probe of ``workload``, send it one request, return the report
    (``{"raw": {"min_us", "median_us"}, "tritonpy": {...}, "profile": text}``; the figures
    are per ``execute()`` call of ``requests`` requests)."""
    from tritonpy.server import TritonServer

    payload = _member_payload(workload) if workload in MEMBERS else _SIMPLE[workload][4]()[0]
    with tempfile.TemporaryDirectory(prefix="tritonpy-probe-") as tmp:
        repo, output = Path(tmp) / "repo", Path(tmp) / "probe.json"
        name = build_probe(repo, workload, output, calls, profile, baseline, requests, evict_kb)
        with TritonServer(repo, startup_timeout=300.0) as server:
            grpc_infer_once(server.grpc_url, name, payload)
        return json.loads(output.read_text(encoding="utf-8"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="add_sub", choices=[*sorted(_SIMPLE), *MEMBERS])
    parser.add_argument("--calls", type=int, default=3000, help="calls per variant")
    parser.add_argument(
        "--requests", type=int, default=1, help="copies of the request per execute() call"
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of tritonpy")
    parser.add_argument(
        "--evict-kb",
        type=int,
        default=0,
        help="write over this many KB before each timed call (cold caches, as under load)",
    )
    parser.add_argument(
        "--baseline", metavar="COMMIT", help="also time the tritonpy of this git commit"
    )
    args = parser.parse_args(argv)
    report: Dict[str, Any] = run_probe(
        args.workload, args.calls, args.profile, args.baseline, args.requests, args.evict_kb
    )
    per = f"per call of {args.requests} requests" if args.requests > 1 else "per request"
    for variant in ("raw", "tritonpy", "baseline"):
        if variant not in report:
            continue
        figures = report[variant]
        print(
            f"{args.workload} {variant:<9} execute(): {figures['min_us']:8.1f} us min, "
            f"{figures['median_us']:8.1f} us median {per}"
        )
    for name, micros in report.get("primitives", {}).items():
        print(f"  {name:<40} {micros:6.2f} us")
    gap = report["tritonpy"]["min_us"] - report["raw"]["min_us"]
    print(f"tritonpy - raw: {gap:+.1f} us {per} (min of rounds)")
    if "baseline" in report:
        gap = report["baseline"]["min_us"] - report["raw"]["min_us"]
        print(f"baseline ({args.baseline}) - raw: {gap:+.1f} us {per} (min of rounds)")
    if "profile" in report:
        print(report["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
