"""Run records: what an accuracy or comparison run measured, committed beside its page.

A record holds everything the page shows and everything needed to score and plot the run
again: what ran (command, every tool's version, Kafka's, Burrow's, Prometheus'), the machine
(cores, load average at the start and the end), when, the settings, the harness's ground-truth
log and samples, the peers' samples and the query-time rule as Prometheus returned it, and the
scores computed at the end of the run. Values are rounded (milliseconds as integers, seconds
to 3 decimals) so the file stays small; one above 1 MB is gzipped. Pages are rendered from
records only, so they can be checked against them at any time.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = [
    "FORMAT",
    "GZIP_ABOVE",
    "git_commit",
    "load_records",
    "machine_now",
    "round_peers",
    "round_rule",
    "round_run",
    "save_record",
]

FORMAT = 1
GZIP_ABOVE = 1_000_000  # bytes of JSON


def machine_now() -> dict[str, Any]:
    """Cores, CPU model, kernel and load average now (read at the run's start and end only)."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "system": f"{platform.system()} {platform.release()}",
        "load": [round(v, 2) for v in os.getloadavg()],
    }


def git_commit(repo: Path, path: Path | None = None) -> str:
    """The tree's commit (with ``+dirty`` if files differ; only ``path``'s state if given), or
    "unknown"."""
    only = [str(path)] if path is not None else []
    try:
        head = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%h",
                               "--abbrev=12", *only],
                              capture_output=True, text=True, timeout=10, check=True).stdout
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no", *only],
                               capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.strip() + ("+dirty" if dirty.strip() else "")


def _r(value: Any, ms: bool) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value) if ms else round(value, 3)
    return value


def round_run(run_json: dict[str, Any]) -> dict[str, Any]:
    """A :meth:`RunData.to_json` with every sample field rounded (``*_ms`` to integers)."""
    fields: list[str] = run_json.get("sample_fields", [])
    out = dict(run_json)
    out["t0_ms"] = round(run_json["t0_ms"])
    out["end_ms"] = round(run_json["end_ms"])
    out["wall_s"] = round(run_json.get("wall_s", 0.0), 1)
    shapes = []
    for shape in run_json["shapes"]:
        rows = [[_r(v, f.endswith("_ms")) for f, v in zip(fields, row, strict=True)]
                for row in shape["samples"]]
        shapes.append({**shape, "samples": rows})
    out["shapes"] = shapes
    return out


def round_peers(peers: dict[str, Any]) -> dict[str, Any]:
    """Peers' samples ``[t_ms, time_lag_s, offset_lag]`` rounded."""
    return {tool: {key: [[_r(t, True), _r(lag, False), _r(off, False)] for t, lag, off in rows]
                   for key, rows in series.items()} for tool, series in peers.items()}


def round_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """``{"rule": {group: [[t_ms, value_s]]}, ...}`` rounded."""
    return {**rule, "rule": {g: [[_r(t, True), _r(v, False)] for t, v in points]
                             for g, points in rule.get("rule", {}).items()}}


def save_record(directory: Path, record: dict[str, Any]) -> Path:
    """``directory/<started>-<kind>-kafka-<version>.json`` (``.json.gz`` above 1 MB)."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = str(record.get("started", "unknown")).replace(":", "").replace("-", "")[:15]
    name = f"{stamp}-{record.get('kind', 'run')}-kafka-{record.get('kafka', 'unknown')}"
    text = json.dumps(record, separators=(",", ":"), sort_keys=True)
    if len(text) > GZIP_ABOVE:
        path = directory / f"{name}.json.gz"
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path = directory / f"{name}.json"
        path.write_text(text + "\n")
    return path


def load_records(directory: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """Every record in ``directory`` (``kind`` only, if given), oldest first; each carries its
    file name as ``_file``."""
    records: list[dict[str, Any]] = []
    if not directory.is_dir():
        return records
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".json.gz"):
            data = json.loads(gzip.decompress(path.read_bytes()))
        elif path.name.endswith(".json"):
            data = json.loads(path.read_text())
        else:
            continue
        if not isinstance(data, dict) or (kind is not None and data.get("kind") != kind):
            continue
        data["_file"] = path.name
        records.append(data)
    return sorted(records, key=lambda r: (str(r.get("started", "")), r["_file"]))
