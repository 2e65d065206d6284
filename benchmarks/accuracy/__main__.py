"""``python -m benchmarks.accuracy``: run the accuracy harness and write its report.

Full run (default): six shapes, 8 min of traffic, ~9 min wall time; writes ``build/accuracy/``
(run.json, report.md, PNGs). ``docs/accuracy.md`` is rendered from committed run records, which
``python -m benchmarks.compare`` writes (with a real Prometheus evaluating the query-time rule);
``--docs PATH`` writes this run's own page elsewhere.
``--quick``: 2 min of traffic (~2.5 min wall), report under ``build/accuracy/`` only.
``--from RUN.json``: re-score and re-plot a saved run without the stack.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from benchmarks.accuracy.analysis import analyse, pool_results
from benchmarks.accuracy.harness import HarnessConfig, RunData, run_harness
from benchmarks.accuracy.report import markdown_table, own_error_table, write_docs, write_report
from benchmarks.accuracy.shapes import standard_shapes

REPO = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="2 min of traffic, no docs rewrite")
    p.add_argument("--duration", type=float, help="seconds of traffic (default 480; quick 120)")
    p.add_argument("--low-volume-interval", type=float,
                   help="seconds between low-volume records (default 45; quick 35)")
    p.add_argument("--sample-interval", type=float, default=1.0, help="seconds between samples")
    p.add_argument("--frequency", type=float, default=2.0, help="exporter frequency_sec")
    p.add_argument("--threshold", type=float, default=20.0, help="alert threshold, s")
    p.add_argument("--rate-window", type=float, default=60.0, help="lag ÷ rate window, s")
    p.add_argument("--table-size", type=int, default=60, help="interpolation table points")
    p.add_argument("--table-poll", type=float, default=0.0,
                   help="interpolation poll interval, s (0: every sample)")
    p.add_argument("--shapes", help="comma-separated subset of shapes")
    p.add_argument("--replicas", type=int, default=1,
                   help="copies of each shape at once, copy k shifted by k/N of the "
                   "exporter's frequency and whole cycles of its own (scores pooled over the N "
                   "phases)")
    p.add_argument("--kafka-version", help="devstack's Kafka: 3.9.1 (default, Debian's Burrow "
                   "1.2.1) or 4.1.1 (the Burrow >= 1.9.5 in FT_BURROW_BIN)")
    p.add_argument("--out", type=Path, default=REPO / "build" / "accuracy",
                   help="report directory (default build/accuracy)")
    p.add_argument("--docs", type=Path, help="also write this run's page here")
    p.add_argument("--no-docs", action="store_true", help="do not write the docs page")
    p.add_argument("--from", dest="from_run", type=Path,
                   help="re-score a saved run.json instead of running")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.from_run:
        run = RunData.load(args.from_run)
    else:
        quick = args.quick
        config = HarnessConfig(
            duration_s=args.duration or (120.0 if quick else 480.0),
            low_volume_interval_s=args.low_volume_interval or (35.0 if quick else 45.0),
            sample_interval_s=args.sample_interval, frequency_s=args.frequency,
            threshold_s=args.threshold, rate_window_s=args.rate_window,
            table_limit=args.table_size, table_poll_s=args.table_poll,
            moment_window_s=10.0 if quick else 20.0, mode="quick" if quick else "full",
            replicas=args.replicas,
        )
        shapes = standard_shapes(config.duration_s, config.low_volume_interval_s)
        if args.shapes:
            wanted = set(args.shapes.split(","))
            unknown = wanted - {s.name for s in shapes}
            if unknown:
                print(f"unknown shapes: {', '.join(sorted(unknown))}", file=sys.stderr)
                return 2
            shapes = [s for s in shapes if s.name in wanted]
        run = run_harness(config, shapes, workdir=args.out / "work", progress=print,
                          kafka_version=args.kafka_version)
        run.save(args.out / "run.json")
    results = pool_results(analyse(run))
    report = write_report(run, results, args.out)
    print()
    print(markdown_table(results, run.config))
    print()
    print(own_error_table(results, run.config))
    print(f"\nreport: {report}  (raw run: {args.out / 'run.json'})")
    docs = args.docs
    if docs is not None and not args.no_docs:
        write_docs(run, results, docs, docs.parent / "img")
        print(f"docs: {docs}")
    beyond = [(r.run.shape.name, r.max_excess_s) for r in results if r.max_excess_s > 0]
    if beyond:
        print("\nfreshness-tracker was beyond one cycle + refresh of the truth on: "
              + ", ".join(f"{n} (by {e:.2f} s)" for n, e in beyond), file=sys.stderr)
        return 1
    print(f"\nfreshness-tracker stayed within one cycle + refresh of the truth on every shape "
          f"({run.wall_s / 60:.1f} min wall time).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
