"""The catch-up estimate against the truth, on the harness's outage-catchup shape.

    python -m benchmarks.accuracy --shapes outage-catchup --no-docs  # build/accuracy/run.json
    python -m benchmarks.accuracy.catch_up build/accuracy/run.json

The group catches up at a known moment: the first commit after the consumer resumes that
leaves nothing uncommitted (the harness's own log of what it produced and committed, no Burrow,
no Kafka read). At every sample, the truth is the time left until then; ours is
`kafka_consumer_group_catch_up_estimate_seconds` as /metrics served it, or its absence with
`kafka_consumer_group_catching_up` 0 ("not catching up") or absent (unknown). Per phase (outage,
catching up, caught up): how many samples said what, and the estimate's error (estimate - truth,
seconds). Nothing asserts: it prints.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks.accuracy.harness import RunData, ShapeRun
from benchmarks.accuracy.truth import TruthLog

SHAPE = "outage-catchup"


def caught_up_ms(truth: TruthLog, after_ms: float) -> float | None:
    """The first commit at or after `after_ms` that leaves nothing uncommitted."""
    for time_ms, offset in truth.commits:
        if time_ms >= after_ms and offset >= truth.records_at(time_ms):
            return float(time_ms)
    return None


def _phases(r: ShapeRun, t0_ms: float) -> tuple[float, float]:
    """(outage start, resume) in epoch ms: the consumer phase without processing, and the next."""
    phases = r.shape.consumer
    i = next(i for i, (_start, processing) in enumerate(phases) if processing is None)
    return t0_ms + phases[i][0] * 1000, t0_ms + phases[i + 1][0] * 1000


def score(run: RunData) -> dict[str, dict[str, float]]:
    r = next(s for s in run.shapes if s.shape.name == SHAPE)
    down_ms, resume_ms = _phases(r, run.t0_ms)
    done_ms = caught_up_ms(r.truth, resume_ms)
    if done_ms is None:
        raise SystemExit("the group never caught up in this run")
    out: dict[str, dict[str, float]] = {
        "times": {"outage_s": (resume_ms - down_ms) / 1000,
                  "catch_up_s": (done_ms - resume_ms) / 1000}}
    phases = (("keeping up", run.t0_ms, down_ms), ("outage", down_ms, resume_ms),
              ("catching up", resume_ms, done_ms), ("caught up", done_ms, run.end_ms))
    for name, start, end in phases:
        samples = [s for s in r.samples if start <= s.metrics_ms < end]
        errors = [s.ours_catch_up_s - (done_ms - s.metrics_ms) / 1000 for s in samples
                  if name == "catching up" and s.ours_catch_up_s is not None]
        out[name] = {
            "samples": len(samples),
            "estimate": sum(s.ours_catch_up_s is not None for s in samples),
            "not_catching_up": sum(s.ours_catching_up == 0 for s in samples),
            "unknown": sum(s.ours_catching_up is None for s in samples),
            "median_error_s": statistics.median(errors) if errors else float("nan"),
            "max_abs_error_s": max((abs(e) for e in errors), default=float("nan")),
        }
    out["catching up, per sample"] = {
        f"{(s.metrics_ms - resume_ms) / 1000:.0f}": (
            s.ours_catch_up_s if s.ours_catch_up_s is not None else -1.0)
        for s in r.samples if resume_ms <= s.metrics_ms < done_ms}
    out["truth left, per sample"] = {
        f"{(s.metrics_ms - resume_ms) / 1000:.0f}": (done_ms - s.metrics_ms) / 1000
        for s in r.samples if resume_ms <= s.metrics_ms < done_ms}
    return out


def main(argv: list[str]) -> int:
    run = RunData.load(Path(argv[0]) if argv else Path("build/accuracy/run.json"))
    result = score(run)
    times = result["times"]
    print(f"{SHAPE}: outage {times['outage_s']:.0f} s, then caught up "
          f"{times['catch_up_s']:.1f} s after the consumer resumed (truth)")
    print("phase | samples | with an estimate | 'not catching up' (0) | unknown | "
          "median error s | max |error| s")
    for name in ("keeping up", "outage", "catching up", "caught up"):
        p = result[name]
        print(f"{name} | {p['samples']:.0f} | {p['estimate']:.0f} | {p['not_catching_up']:.0f} | "
              f"{p['unknown']:.0f} | {p['median_error_s']:.1f} | {p['max_abs_error_s']:.1f}")
    ours, truth = result["catching up, per sample"], result["truth left, per sample"]
    print("s after resume: truth left / ours (- absent)")
    print("  " + "  ".join(f"{t}: {truth[t]:.0f}/{'-' if ours[t] < 0 else f'{ours[t]:.0f}'}"
                           for t in ours))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
