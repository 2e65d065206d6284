"""CPU of the Burrow client's part of a cycle (`cluster_lags` over every group, each `/lag`
answer fetched and decoded into domain values), the client of a given git revision against the
working tree's, in the same run against the same generated Burrow.

Why: the client moved from a hand-made HTTP/1.1 stack to requests, accepting more CPU per
request for a client a newcomer can read; the budget it must stay within is 100,000 partitions
on half a core at the default 30 s frequency. Each measurement runs in a child process of its
own (the client, a fresh interpreter), alternating old and new, so a loaded machine's drift
costs both alike; the generated Burrow runs in yet another process, so its CPU is not counted.

    python -m benchmarks.bench_burrow_client --groups 1000 5000 --reps 2 \\
        --out docs/records/performance/burrow-client-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.scale_burrow import ClusterLayout, GeneratedBurrow, Layout

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 20
CLUSTER = "c"
#: The child: one client, one warm-up cycle (connections, threads), then timed cycles.
CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from {module} import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.deadline import Deadline, cycle_deadline
url, cycles = sys.argv[2], int(sys.argv[3])
client = BurrowClient(BurrowSettings(url=url), clock=lambda: int(time.time() * 1000))
groups = client.consumers("c")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def cycle():
    with cycle_deadline(Deadline.after(300)):
        lags = client.cluster_lags("c", groups)
    assert len(lags.groups) == len(groups), (lags.failed_groups[:3], len(lags.groups))
cycle()
spent = []
for _ in range(cycles):
    c0, w0 = cpu(), time.monotonic()
    cycle()
    spent.append((cpu() - c0, time.monotonic() - w0))
client.close()
print(json.dumps(spent))
"""


def old_client(revision: str, into: Path) -> str:
    """The revision's client as a module `old_burrow_client` under `into` (its own HTTP module
    beside it when it has one); returns the module's name."""
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{revision}:freshness_tracker/burrow/client.py"],
                            check=True, capture_output=True, text=True).stdout
    http1 = subprocess.run(["git", "-C", str(ROOT), "show",
                            f"{revision}:freshness_tracker/burrow/http1.py"],
                           capture_output=True, text=True)
    if http1.returncode == 0:
        (into / "old_burrow_http1.py").write_text(http1.stdout)
        source = source.replace("freshness_tracker.burrow.http1", "old_burrow_http1")
    (into / "old_burrow_client.py").write_text(source)
    return "old_burrow_client"


def measure(module: str, path: Path, url: str, cycles: int) -> list[list[float]]:
    script = CHILD.format(module=module)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script, str(path), url, str(cycles)],
                         check=True, capture_output=True, text=True, env=env, timeout=1800)
    spent: list[list[float]] = json.loads(out.stdout)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="main", help="the git revision of the old client")
    parser.add_argument("--groups", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--reps", type=int, default=2, help="child processes per client")
    parser.add_argument("--cycles", type=int, default=2, help="timed cycles per child")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    began = time.monotonic()
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        old_module = old_client(args.old, Path(tmp))
        for groups in args.groups:
            layout = Layout({CLUSTER: ClusterLayout(groups=groups, partitions=PARTITIONS)})
            cpu: dict[str, list[float]] = {"old": [], "new": []}
            wall: dict[str, list[float]] = {"old": [], "new": []}
            with GeneratedBurrow(layout) as burrow:
                for _ in range(args.reps):
                    for name, module, path in (("old", old_module, Path(tmp)),
                                               ("new", "freshness_tracker.burrow.client", ROOT)):
                        for c, w in measure(module, path, burrow.url, args.cycles):
                            cpu[name].append(c)
                            wall[name].append(w)
            old_s, new_s = median(cpu["old"]), median(cpu["new"])
            rows.append({
                "groups": groups, "partitions": groups * PARTITIONS,
                "cpu_s_per_cycle": {"old": round(old_s, 3), "new": round(new_s, 3)},
                "wall_s_per_cycle": {k: round(median(v), 3) for k, v in wall.items()},
                "samples_cpu_s": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
                "ratio_new_over_old": round(new_s / old_s, 2),
                # the client's share of a core at the default 30 s frequency, scaled linearly
                # to 100,000 partitions
                "new_cores_at_100k_partitions_30s": round(
                    new_s * 100_000 / (groups * PARTITIONS) / 30, 3),
            })
            print(json.dumps(rows[-1]), flush=True)
    record = {
        "what": "CPU of BurrowClient.cluster_lags per cycle (every /lag fetched and decoded), "
                f"old client ({args.old}) vs this tree's, against benchmarks.scale_burrow",
        "old_revision": subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.old],
                                       capture_output=True, text=True).stdout.strip(),
        "new_revision": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
        "concurrency": "burrow.concurrency default",
        "cycles_per_child": args.cycles, "children_per_client": args.reps,
        "rows": rows,
        "budget": "100,000 partitions within 0.5 core at frequency_sec = 30 (whole cycle)",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in os.getloadavg()]},
        "run_wall_s": round(time.monotonic() - began, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
