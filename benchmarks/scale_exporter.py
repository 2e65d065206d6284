"""The exporter under test for `benchmarks.bench_scale`, in a process of its own.

    python -m benchmarks.scale_exporter '<json options>'

Runs the production wiring (`Exporter` + `MetricsServer`) against a Burrow URL, serving /metrics
either from the cached bytes (`"serve": "cached"`, what `run` does) or, as the baseline, through
prometheus_client's WSGI app over a registry of the same families (`"serve": "registry"`:
`generate_latest` at every scrape, the path before the cached exposition). Also runs with an
older checkout of the exporter first on PYTHONPATH (the bench's `--before`), which only knows
the registry path.

The parent drives it with one command per stdin line and reads one JSON line per answer:
`cycle` (one `run_once`, with this process's CPU time for it), `loops <seconds>` (every
cluster's own loop, as `run` does), `size` (the exposition's bytes and series per set),
`status`, `quit`. CPU time is the whole process's (every thread, librdkafka's included).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

HOCON_CLUSTER = ('{{ name = {name}, numConsumers = {consumers}, '
                 'kafka {{ "bootstrap.servers" = {bootstrap} }} }}')


def proc_status(pid: int | str = "self") -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process, in MiB."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _settings(opts: dict[str, Any]) -> Any:
    from freshness_tracker.config.load import load_settings

    clusters = ", ".join(HOCON_CLUSTER.format(name=json.dumps(c),
                                              bootstrap=json.dumps(opts["bootstrap"]),
                                              consumers=opts.get("num_consumers", 2))
                         for c in opts["clusters"])
    text = (f"burrow.url = {json.dumps(opts['burrow_url'])}\n"
            f"clusters = [{clusters}]\n"
            f"frequency_sec = {opts.get('frequency_s', 1)}\n"
            "listenAddress = \"127.0.0.1\"\nport = 0\n"
            "logging.level = WARNING\n")
    if opts.get("shard"):
        text += f"shard {{ index = {opts['shard'][0]}, count = {opts['shard'][1]} }}\n"
    if opts.get("partition_metrics") is not None:
        text += f"partitionMetrics = {json.dumps(opts['partition_metrics'])}\n"
    text += opts.get("hocon", "")
    return load_settings(text=text)


class Child:
    def __init__(self, opts: dict[str, Any]) -> None:
        from freshness_tracker.app import Exporter
        from freshness_tracker.http import MetricsServer, make_app

        self.settings = _settings(opts)
        self.exporter = Exporter(self.settings)
        cached = opts.get("serve", "cached") == "cached" and hasattr(self.exporter, "exposition")
        source: Any
        if cached:
            source = self.exporter.exposition
        elif hasattr(self.exporter, "registry"):  # an older checkout's own registry
            source = getattr(self.exporter, "registry")  # noqa: B009
        else:  # the same families through prometheus_client (the tests' oracle)
            from devstack.oracle import reference_registry

            source = reference_registry(self.exporter)
        self.serving = "cached" if cached else "registry"
        app = make_app(source, self.exporter.health, self.exporter.ready, self.settings.web)
        self.server = MetricsServer(app, self.settings.web).start()

    def cycle(self) -> dict[str, Any]:
        cpu, wall = cpu_s(), time.monotonic()
        snapshot = self.exporter.run_once()
        out: dict[str, Any] = {"cpu_s": cpu_s() - cpu, "wall_s": time.monotonic() - wall}
        out["partitions"] = sum(len(c.partitions) for c in snapshot.clusters)
        out["up"] = all(c.health.up for c in snapshot.clusters)
        out["errors"] = [c.health.error for c in snapshot.clusters if c.health.error][:3]
        out["kafka_reads"] = sum(c.health.kafka_reads for c in snapshot.clusters)
        out["cache_hits"] = sum(c.health.cache_hits for c in snapshot.clusters)
        out["read_failures"] = sum(c.health.kafka_read_failures for c in snapshot.clusters)
        return out | proc_status()

    def loops(self, seconds: float) -> dict[str, Any]:
        """Every cluster's loop for `seconds`; each publication seen by polling the holder (a
        sink thread can fall behind on a busy interpreter and drop cycles, this cannot)."""
        stop = threading.Event()
        thread = threading.Thread(target=self.exporter.run_forever, args=(stop,), daemon=True)
        seen = {c.cluster: c.cycle_id for c in self.exporter.holder.current.clusters}
        by: dict[str, list[int]] = {}
        cpu, deadline = cpu_s(), time.monotonic() + seconds
        thread.start()
        while time.monotonic() < deadline:
            for c in self.exporter.holder.current.clusters:
                if c.cycle_id != seen.get(c.cluster):
                    seen[c.cluster] = c.cycle_id
                    by.setdefault(c.cluster, []).append(c.health.duration_ms)
            time.sleep(0.1)
        stop.set()
        thread.join()
        used = cpu_s() - cpu
        return {"cpu_s": used, "seconds": seconds, "cycles": {c: len(d) for c, d in by.items()},
                "durations_ms": by} | proc_status()

    def size(self) -> dict[str, Any]:
        """Bytes and series of the snapshot's families: the served set and every family."""
        from prometheus_client import CollectorRegistry

        out: dict[str, Any] = {}
        holder = self.exporter.holder
        if hasattr(self.exporter, "exposition"):
            from freshness_tracker.sinks.exposition import CachedExposition
            from freshness_tracker.sinks.prometheus import SeriesSet

            sets = {"served": self.exporter.exposition.series, "every": SeriesSet.everything()}
            for name, series in sets.items():
                body = CachedExposition(holder, CollectorRegistry(), series).answer().body
                out[name] = _count(body)
        else:  # an older checkout: the registry's own families
            from prometheus_client import generate_latest

            out["served"] = _count(generate_latest(getattr(self.exporter, "registry")))  # noqa: B009
        out["partitions"] = sum(len(c.partitions) for c in holder.current.clusters)
        return out

    def close(self) -> None:
        self.server.stop()
        self.exporter.close()


def _count(body: bytes) -> dict[str, int]:
    series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
    return {"bytes": len(body), "series": series}


def use_tree(tree: str) -> None:
    """Import the exporter from `tree` (an older checkout), not the installed one: the editable
    install's import hook would otherwise win over sys.path."""
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path.insert(0, tree)


def main() -> None:
    opts = json.loads(sys.argv[1])
    if opts.get("tree"):
        use_tree(opts["tree"])
    child = Child(opts)
    print(json.dumps({"port": child.server.port, "pid": os.getpid(),
                      "serving": child.serving}), flush=True)
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "quit":
            break
        if command == "cycle":
            answer = child.cycle()
        elif command == "loops":
            answer = child.loops(float(arg))
        elif command == "size":
            answer = child.size()
        else:
            answer = proc_status()
        print(json.dumps(answer), flush=True)
    child.close()


if __name__ == "__main__":
    main()
