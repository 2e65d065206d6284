"""``python -m devstack.measure [--runs N]``: how long the real stack takes to start and stop, and
how much memory each process holds, for 1 and 3 nodes (one cluster at a time).

Why a script and not a test: these are figures to write down (devstack/README.md), and they
depend on the machine's load, which is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from devstack.processes import rss_bytes
from devstack.stack import RealStack, now_ms

MIB = 1024 * 1024


def measure(nodes: int) -> dict[str, Any]:
    """Start, exercise a little (a topic, 1,000 records, a commit seen by Burrow), stop."""
    began = time.monotonic()
    stack = RealStack(nodes=nodes)
    stack.start()
    try:
        up_s = time.monotonic() - began
        assert stack.kafka is not None and stack.burrow is not None and stack.burrow.pid
        idle = {f"kafka-{i}": rss // MIB for i, rss in stack.kafka.rss_bytes().items()}
        stack.create_topic("measure", partitions=3)
        t = now_ms()
        for p in range(3):
            stack.produce("measure", p, [t - 1_000 + i for i in range(1_000)], value_size=100)
        stack.commit("measure-group", "measure", 0, 500)
        stack.wait_for_burrow_lag("measure-group", "measure", 0, 500, 500)
        busy = {f"kafka-{i}": rss // MIB for i, rss in stack.kafka.rss_bytes().items()}
        burrow_mib = rss_bytes(stack.burrow.pid) // MIB
    finally:
        stopping = time.monotonic()
        stack.stop()
        stop_s = time.monotonic() - stopping
    return {
        "nodes": nodes,
        "start_s": round(up_s, 2),
        "phases_s": stack.start_timings,
        "stop_s": round(stop_s, 2),
        "rss_mib_idle": idle,
        "rss_mib_after_work": busy,
        "burrow_rss_mib": burrow_mib,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="*", default=[1, 3])
    args = parser.parse_args()
    for nodes in args.nodes:
        runs = []
        for _ in range(args.runs):
            load = os.getloadavg()[0]
            result = measure(nodes)
            result["load_1m_before"] = round(load, 2)
            runs.append(result)
            print(json.dumps(result), flush=True)  # noqa: T201
        starts = [r["start_s"] for r in runs]
        print(f"{nodes} node(s): start median {statistics.median(starts):.1f} s "  # noqa: T201
              f"(min {min(starts):.1f}, max {max(starts):.1f}) over {len(runs)} runs")


if __name__ == "__main__":
    main()
