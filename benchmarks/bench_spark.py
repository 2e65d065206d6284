"""The Spark benchmark: the Spark report over 10 million history rows, and Spark lookups against
the thread-pool engine on the same plan, in one run on `local[2]`.

    python3 -m benchmarks.bench_spark [--rows 10000000] [--partitions 1000] [--rtt-ms 0]
                                      [--reps 3] [--json FILE]

1. **Report.** A history table of `--rows` rows is generated straight from numpy/pyarrow in the
   history layout (date/cluster partitions, FILE_SCHEMA columns): 2 clusters × 25 consumers ×
   2 topics × 10 partitions at 30 s cycles (so 10 M rows are ~3.5 days), with slow consumers,
   breach episodes, a stuck group, a 10-minute outage (no data), unmeasured samples and data
   loss. Then `run_report` (the CLI's code path: the Spark SQL series and partitions queries,
   charts, outputs) over the whole window, timed without the session start: rows/s.
2. **Lookups.** The real local stack (`devstack.RealStack`: one Apache Kafka KRaft node, 3.9.1
   unless `--kafka-version` says otherwise, no Burrow: the lags are synthetic; behind a frame
   proxy when `--rtt-ms` adds a round trip); `--partitions` partitions with
   a few records each; one plan (`plan_reads` over synthetic lags of two groups: C and C−1, so
   3 distinct offsets per partition). The same plan goes to `KafkaRecordReader` (the exporter's
   thread-pool engine: `workerThreadCount` 8, 2 consumers) and to `SparkRecordReader` (tasks in
   `local[2]` Python workers over the same engine), cold and warm: lookups/s.

Benchmarks are not tests: nothing here asserts; it prints figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from freshness_tracker.domain.model import PartitionKey, PartitionLag, ReadOutcome
from freshness_tracker.domain.plan import plan_reads
from freshness_tracker.domain.slo import Objective, parse_target
from freshness_tracker.kafka.consumers import ConsumerPool
from freshness_tracker.kafka.lookup import KafkaRecordReader
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.sinks.history import FILE_SCHEMA, partition_path

log = logging.getLogger("benchmarks.bench_spark")

CYCLE_MS = 30_000
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CLUSTERS, CONSUMERS, TOPICS, PARTS = 2, 25, 2, 10
DAY_MS = 86_400_000


# --- 1. the report over a generated history ------------------------------------------------


def _freshness(rng: np.random.Generator, cycles: np.ndarray, consumer: int) -> np.ndarray:
    """Freshness (ms) per (cycle, topic, partition) of one consumer: a level per consumer,
    noise, a breach episode every few hours for every 5th consumer, one stuck consumer."""
    n = len(cycles)
    shape = (n, TOPICS * PARTS)
    level = 5_000 + 12_000 * (consumer % 7)
    values = rng.gamma(4.0, level / 4.0, size=shape)
    if consumer % 5 == 0:  # an 8-minute incident every 6 hours on one partition
        phase = (cycles * CYCLE_MS) % (6 * 3_600_000)
        values[phase < 8 * 60_000, consumer % (TOPICS * PARTS)] += 900_000
    if consumer == 13:  # stuck for the last day: freshness grows by a second per second
        stuck_from = cycles.max() - 2880
        grow = np.clip(cycles - stuck_from, 0, None) * CYCLE_MS
        values += grow[:, None]
    return values.astype(np.int64)


def generate_history(root: str, rows: int, seed: int = 7) -> int:
    """Write about `rows` rows in the history layout; returns the rows written."""
    rng = np.random.default_rng(seed)
    per_cycle = CLUSTERS * CONSUMERS * TOPICS * PARTS
    cycles_total = max(1, rows // per_cycle)
    outage = set(range(cycles_total // 2, cycles_total // 2 + 20))  # 10 minutes: no files
    all_cycles = np.array([c for c in range(cycles_total) if c not in outage], dtype=np.int64)
    written = 0
    consumers = [f"app-{i:02d}" for i in range(CONSUMERS)]
    topics = [f"topic-{j}" for j in range(TOPICS)]
    for cluster in (f"cluster-{k}" for k in range(CLUSTERS)):
        fresh = np.stack([_freshness(rng, all_cycles, c) for c in range(CONSUMERS)], axis=1)
        # fresh: (cycle, consumer, topic*partition)
        days = (START_MS + all_cycles * CYCLE_MS) // DAY_MS
        for day in np.unique(days):
            sel = all_cycles[days == day]
            block = fresh[days == day].reshape(-1)  # cycle-major, then consumer, then tp
            n_rows = len(block)
            per = CONSUMERS * TOPICS * PARTS
            t = np.repeat(START_MS + sel * CYCLE_MS, per)
            consumer_idx = np.tile(np.repeat(np.arange(CONSUMERS), TOPICS * PARTS), len(sel))
            tp = np.tile(np.arange(TOPICS * PARTS), len(sel) * CONSUMERS)
            topic_idx, partition = tp // PARTS, (tp % PARTS).astype(np.int32)
            unmeasured = rng.random(n_rows) < 0.001
            loss = (consumer_idx == 3) & (tp == 7) & ((t // 3_600_000) % 24 == 5)
            freshness = pa.array(block, mask=unmeasured)
            table = pa.table({
                "cycle_id": pa.array(np.char.add(f"{cluster}@", t.astype(str))),
                "cycle_start": pa.array(t, pa.timestamp("ms", tz="UTC")),
                "sample_time": pa.array(t + 400, pa.timestamp("ms", tz="UTC")),
                "consumer": pa.array(consumers).take(pa.array(consumer_idx)),
                "topic": pa.array(topics).take(pa.array(topic_idx)),
                "partition": pa.array(partition),
                "status": pa.array(np.where(loss, "data_loss",
                                            np.where(unmeasured, "lookup_failed", "ok"))),
                "burrow_status": pa.array(np.full(n_rows, "OK")),
                "committed_offset": pa.array(np.full(n_rows, 1_000, dtype=np.int64)),
                "log_end_offset": pa.array(np.full(n_rows, 1_010, dtype=np.int64)),
                "offset_lag": pa.array(np.full(n_rows, 10, dtype=np.int64)),
                "commit_time": pa.array(t - 5_000, pa.timestamp("ms", tz="UTC")),
                "record_timestamp": pa.array(t + 400 - block, pa.timestamp("ms", tz="UTC"),
                                             mask=unmeasured),
                "freshness_ms": freshness,
                "commit_lag_ms": pa.array(np.full(n_rows, 1_500, dtype=np.int64)),
                "data_loss": pa.array(loss),
                "lost_records": pa.array(np.where(loss, 250, 0).astype(np.int64)),
                "retention_headroom_ms": pa.array(7 * DAY_MS - block),
                "lookup_error": pa.array(np.where(unmeasured, "timed out", ""), mask=~unmeasured),
            }).cast(FILE_SCHEMA)
            date = dt.datetime.fromtimestamp(int(day) * DAY_MS / 1000, tz=dt.UTC).date()
            directory = Path(partition_path(root, date, cluster))
            directory.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, directory / f"bench-{int(day)}.parquet", compression="zstd")
            written += n_rows
    return written


def bench_report(spark: Any, rows: int, workdir: Path, reps: int) -> dict[str, Any]:
    from freshness_tracker.spark.report_job import ReportOptions, run_report

    history, out = workdir / "history", workdir / "report"
    began = time.monotonic()
    written = generate_history(str(history), rows)
    generate_s = time.monotonic() - began
    size = sum(f.stat().st_size for f in history.rglob("*.parquet"))
    cycles = written // (CLUSTERS * CONSUMERS * TOPICS * PARTS)
    end = START_MS + (cycles + 20) * CYCLE_MS
    objectives = [Objective("app-0.*", 60_000, parse_target("99%")),
                  Objective("app-1.*", 120_000, parse_target("99.9%"), topic="topic-0"),
                  Objective(".*", 300_000, parse_target("99.5%"))]
    options = ReportOptions(start_ms=START_MS, end_ms=end, gap_cycles=3)
    durations = []
    for _ in range(reps):  # the first run includes JIT warm-up of every query; a CLI run pays it
        began = time.monotonic()
        summary = run_report(spark, str(history), str(out), objectives, options)
        durations.append(time.monotonic() - began)
    return {
        "rows": summary.rows, "generate_s": round(generate_s, 1),
        "generate_rows_per_s": round(written / generate_s),
        "history_mib": round(size / 2**20, 1),
        "report_first_s": round(durations[0], 1),
        "report_first_rows_per_s": round(summary.rows / durations[0]),
        "report_s": round(min(durations), 1),
        "report_rows_per_s": round(summary.rows / min(durations)),
        "consumers": summary.consumers, "topics": summary.topics, "met": summary.met,
        "missed": summary.missed, "data_loss_partitions": summary.data_loss_partitions,
        "html": summary.files.get("html"),
    }


# --- 2. lookups: Spark tasks against the thread-pool engine -----------------------------------


def _stack_with_topics(
    partitions: int, rtt_ms: float, kafka_version: str | None
) -> tuple[Any, list[tuple[str, int]]]:
    from confluent_kafka import Producer

    from devstack import RealStack

    stack = RealStack(rtt_ms=rtt_ms, kafka_version=kafka_version, burrow=False).start()
    per_topic = 100
    names = [f"bench-{i}" for i in range((partitions + per_topic - 1) // per_topic)]
    sizes = [min(per_topic, partitions - i * per_topic) for i in range(len(names))]
    for name, size in zip(names, sizes, strict=True):  # the lags are synthetic: no Burrow wait
        stack.create_topic(name, size, retention_ms=7 * DAY_MS, wait_for_burrow=False)
    assert stack.kafka is not None
    # the unproxied listener: producing is set-up, not what is measured
    producer = Producer({"bootstrap.servers": stack.kafka.internal_bootstrap_servers,
                         "linger.ms": 5})
    now = int(time.time() * 1000)
    parts = [(n, p) for n, s in zip(names, sizes, strict=True) for p in range(s)]
    for topic, p in parts:
        for i in range(5):
            producer.produce(topic, b"x" * 16, partition=p, timestamp=now - 60_000 + i * 1_000)
        producer.poll(0)
    producer.flush(60)
    return stack, parts


def bench_lookups(
    spark: Any, partitions: int, rtt_ms: float, reps: int, kafka_version: str | None = None
) -> dict[str, Any]:
    from freshness_tracker.spark.reader import SparkRecordReader
    from freshness_tracker.spark.worker import close_engines

    stack, parts = _stack_with_topics(partitions, rtt_ms, kafka_version)
    try:
        kafka = ClusterKafkaSettings("local", MappingProxyType(
            {"bootstrap.servers": stack.bootstrap_servers}), num_consumers=2)
        lookup = LookupSettings()
        lags = [PartitionLag(PartitionKey("local", g, t, p), committed, 1_000, 5 - committed)
                for g, committed in (("g1", 2), ("g2", 3)) for t, p in parts]
        plan = plan_reads(lags, lambda _r: False)
        requests = plan.to_read
        figures: dict[str, Any] = {"partitions": len(parts), "lookups": len(requests),
                                   "rtt_ms": rtt_ms, "kafka_version": stack.kafka_version}

        def threadpool(pool: ConsumerPool, executor: ThreadPoolExecutor) -> float:
            began = time.monotonic()
            reads = KafkaRecordReader(kafka, lookup, pool, executor).read(requests)
            took = time.monotonic() - began
            assert all(r.outcome is ReadOutcome.FOUND for r in reads), "lookups failed"
            return took

        with ThreadPoolExecutor(8) as executor:
            pool = ConsumerPool(kafka, lookup)
            try:
                cold = threadpool(pool, executor)
                warm = [threadpool(pool, executor) for _ in range(reps)]
            finally:
                pool.close()
        figures["threadpool_cold_s"] = round(cold, 3)
        figures["threadpool_warm_s"] = round(statistics.median(warm), 3)

        reader = SparkRecordReader(spark, kafka, lookup)

        def spark_read() -> float:
            began = time.monotonic()
            reads = reader.read(requests)
            took = time.monotonic() - began
            assert all(r.outcome is ReadOutcome.FOUND for r in reads), "lookups failed"
            return took

        try:
            spark_cold = spark_read()  # new Python workers, new consumers
            spark_warm = [spark_read() for _ in range(reps)]
        finally:
            reader.close()
            close_engines()
        figures["spark_cold_s"] = round(spark_cold, 3)
        figures["spark_warm_s"] = round(statistics.median(spark_warm), 3)
        figures["spark_tasks"] = reader.last_run.get("tasks")
        figures["spark_python_workers"] = len(reader.last_run.get("worker_pids", []))
        for name in ("threadpool_cold", "threadpool_warm", "spark_cold", "spark_warm"):
            figures[f"{name}_lookups_per_s"] = round(len(requests) / figures[f"{name}_s"])
        return figures
    finally:
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=1_000)
    parser.add_argument("--rtt-ms", type=float, default=0.0)
    parser.add_argument("--kafka-version", default=None,
                        help="devstack's Kafka for the lookups (default: the stack's, 3.9.1)")
    parser.add_argument("--reps", type=int, default=3, help="warm lookup repetitions")
    parser.add_argument("--report-reps", type=int, default=2, help="report runs (first is cold)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-report", action="store_true")
    parser.add_argument("--skip-lookups", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="write the run record (what docs/spark.md is rendered from) to "
                             "DIR/bench_spark.json")  # fmt: skip
    args = parser.parse_args()
    from benchmarks.common import RunRecord

    record = RunRecord("bench_spark")
    figures = record.measuring(args.record, lambda: run(args))
    if args.record:
        import pyspark

        ratios: dict[str, Any] = {}
        if "lookups" in figures:
            lk = figures["lookups"]
            ratios["lookups_spark_over_threadpool"] = {
                kind: lk[f"spark_{kind}_s"] / lk[f"threadpool_{kind}_s"]
                for kind in ("cold", "warm")}
        path = record.write(args.record, figures, ratios, versions={"pyspark": pyspark.__version__})
        print(f"run record written to {path}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    from freshness_tracker.spark.session import get_session

    began = time.monotonic()
    spark = get_session(args.master, "freshness-tracker bench", {
        "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"})
    figures: dict[str, Any] = {"master": args.master,
                               "session_start_s": round(time.monotonic() - began, 1)}
    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        if not args.skip_report:
            figures["report"] = bench_report(spark, args.rows, workdir, args.report_reps)
        if not args.skip_lookups:
            figures["lookups"] = bench_lookups(spark, args.partitions, args.rtt_ms, args.reps,
                                               args.kafka_version)
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, indent=2))
    if "report" in figures:
        r = figures["report"]
        print(f"\nreport: {r['rows']:,} rows in {r['report_s']} s = {r['report_rows_per_s']:,} "
              f"rows/s on {args.master}; first run {r['report_first_s']} s = "
              f"{r['report_first_rows_per_s']:,} rows/s (generated in {r['generate_s']} s, "
              f"{r['history_mib']} MiB Parquet)")
    if "lookups" in figures:
        lk = figures["lookups"]
        print(f"lookups (Kafka {lk['kafka_version']}): {lk['lookups']:,} on "
              f"{lk['partitions']:,} partitions, RTT "
              f"{lk['rtt_ms']:g} ms: thread pool {lk['threadpool_warm_lookups_per_s']:,}/s warm "
              f"({lk['threadpool_cold_lookups_per_s']:,}/s cold); Spark "
              f"{lk['spark_warm_lookups_per_s']:,}/s warm ({lk['spark_cold_lookups_per_s']:,}/s "
              f"cold, {lk['spark_tasks']} tasks)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
