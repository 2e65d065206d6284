"""A generated Burrow for the scale benchmark: v3 JSON for N groups × P partitions, fast.

Every answer is built once at startup (plain string templates, ~350 bytes per partition like
Burrow's own `/lag`) and served by an asyncio server with HTTP/1.1 keep-alive, in a process of
its own (`GeneratedBurrow.start()`), so its CPU is never the exporter's.

The layout mirrors a fleet where groups share topics: group `g` of a cluster consumes topic
`{prefix}-t{g % topics:03d}` (`partitions` partitions). A `lagging` share of groups (chosen by a
stable hash) commits below the log end, at an offset that holds a real record of the broker the
benchmark produced (`records` records per partition: offsets 0..records-1, so the log end is
`records`); every other group is caught up (committed = log end, lag 0) and needs no Kafka read.

`delay_ms` per cluster delays each of that cluster's `/lag` answers (a slow Burrow), without
holding any other cluster's answers.

    python -m benchmarks.scale_burrow '{"clusters": {"c": {"groups": 10}}}'   # prints the port
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote

__all__ = ["ClusterLayout", "GeneratedBurrow", "Layout"]


@dataclass(frozen=True)
class ClusterLayout:
    groups: int
    partitions: int = 20
    lagging: float = 0.10
    delay_ms: float = 0.0


@dataclass(frozen=True)
class Layout:
    """What the generated Burrow serves; `commit_time_ms` stamps every commit."""

    clusters: dict[str, ClusterLayout]
    topics: int = 50
    records: int = 40
    prefix: str = "scale"
    commit_time_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @classmethod
    def from_json(cls, text: str) -> Layout:
        raw = json.loads(text)
        clusters = {k: ClusterLayout(**v) for k, v in raw.pop("clusters").items()}
        return cls(clusters=clusters, **raw)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    def topic_names(self) -> list[str]:
        return [f"{self.prefix}-t{i:03d}" for i in range(self.topics)]

    def group_name(self, index: int) -> str:
        return f"{self.prefix}-g{index:06d}"

    def is_lagging(self, cluster: str, index: int) -> bool:
        """A stable `lagging` share of each cluster's groups, spread over every topic."""
        layout = self.clusters[cluster]
        return zlib.crc32(f"{cluster}/{index}".encode()) % 10_000 < layout.lagging * 10_000

    def committed(self, cluster: str, index: int, partition: int) -> int:
        """The group's committed offset on the partition: the log end, or a real record's."""
        if not self.is_lagging(cluster, index):
            return self.records
        spread = zlib.crc32(f"{cluster}\0{index}\0{partition}".encode()) % (self.records - 1)
        return 1 + spread  # 1..records-1: the records at C and C - 1 both exist

    def partitions(self, cluster: str) -> Iterator[tuple[str, str, int, int]]:
        """(group, topic, partition, committed offset) of every partition the cluster lists."""
        layout = self.clusters[cluster]
        topics = self.topic_names()
        for g in range(layout.groups):
            topic = topics[g % self.topics]
            for p in range(layout.partitions):
                yield self.group_name(g), topic, p, self.committed(cluster, g, p)

    def total_partitions(self) -> int:
        return sum(c.groups * c.partitions for c in self.clusters.values())


# --- bodies ------------------------------------------------------------------------------------

_PARTITION = (
    '{{"topic":"{topic}","partition":{partition},"owner":"/10.0.0.1","client_id":"consumer-1",'
    '"status":"{status}","start":{{"offset":{start},"timestamp":{ts},"observedAt":{ts},'
    '"lag":{lag}}},"end":{{"offset":{end},"timestamp":{ts},"observedAt":{ts},"lag":{lag}}},'
    '"current_lag":{lag},"complete":1}}'
)


def _envelope(message: str, body: dict[str, Any], url: str) -> bytes:
    return json.dumps({"error": False, "message": message, **body,
                       "request": {"url": url, "host": "generated"}}).encode()


def _lag_body(layout: Layout, cluster: str, index: int) -> bytes:
    c = layout.clusters[cluster]
    group = layout.group_name(index)
    topic = layout.topic_names()[index % layout.topics]
    ts = layout.commit_time_ms
    parts = []
    total = 0
    for p in range(c.partitions):
        end = layout.committed(cluster, index, p)
        lag = layout.records - end
        total += lag
        parts.append(_PARTITION.format(topic=topic, partition=p, status="OK", start=end,
                                       end=end, ts=ts, lag=lag))
    status = "WARN" if total else "OK"
    return (
        f'{{"error":false,"message":"consumer status returned","status":{{"cluster":'
        f'"{cluster}","group":"{group}","status":"{status}","complete":1,"partitions":['
        + ",".join(parts)
        + f'],"partition_count":{c.partitions},"maxlag":null,"totallag":{total}}},'
        f'"request":{{"url":"/v3/kafka/{cluster}/consumer/{group}/lag","host":"generated"}}}}'
    ).encode()


def build_bodies(layout: Layout, bootstrap: str) -> dict[str, bytes]:
    """Every path the exporter asks for, answered."""
    bodies = {"/v3/kafka": _envelope("cluster list returned",
                                     {"clusters": sorted(layout.clusters)}, "/v3/kafka")}
    for cluster, c in layout.clusters.items():
        base = f"/v3/kafka/{cluster}"
        bodies[base] = _envelope("cluster module detail returned", {"module": {
            "class-name": "kafka", "servers": bootstrap.split(","), "client-profile": {}}}, base)
        groups = [layout.group_name(g) for g in range(c.groups)]
        bodies[f"{base}/consumer"] = _envelope("consumer list returned",
                                               {"consumers": groups}, f"{base}/consumer")
        for g in range(c.groups):
            bodies[f"{base}/consumer/{groups[g]}/lag"] = _lag_body(layout, cluster, g)
    return bodies


# --- server ------------------------------------------------------------------------------------

_NOT_FOUND = json.dumps({"error": True, "message": "not found", "status": {"status": "NOTFOUND"},
                         "request": {"url": "", "host": "generated"}}).encode()


def _response(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: "
            f"{len(body)}\r\n\r\n").encode() + body


class _Http(asyncio.Protocol):
    def __init__(self, answers: dict[str, bytes], delays: dict[str, float]) -> None:
        self._answers = answers
        self._delays = delays
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            head, self._buffer = self._buffer[:end], self._buffer[end + 4:]
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            path = unquote(line[1].split("?", 1)[0]) if len(line) > 1 else "/"
            answer = self._answers.get(path.rstrip("/") or "/")
            if answer is None:
                answer = _response("404 Not Found", _NOT_FOUND)
            delay = self._delay_for(path)
            if delay:
                asyncio.get_running_loop().call_later(delay, self._write, answer)
            else:
                self._write(answer)

    def _delay_for(self, path: str) -> float:
        if not self._delays or not path.endswith("/lag"):
            return 0.0
        return self._delays.get(path.split("/")[3], 0.0)

    def _write(self, answer: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(answer)


async def _serve(layout: Layout, bootstrap: str) -> None:
    answers = {path: _response("200 OK", body) for path, body in
               build_bodies(layout, bootstrap).items()}
    delays = {name: c.delay_ms / 1000 for name, c in layout.clusters.items() if c.delay_ms}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Http(answers, delays), "127.0.0.1", 0,
                                      backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)  # EOF (parent gone or closing): stop
    await closed.wait()
    server.close()


class GeneratedBurrow:
    """The server in a child process; `url` once started. A context manager."""

    def __init__(self, layout: Layout, bootstrap: str = "127.0.0.1:9") -> None:
        self.layout = layout
        self.bootstrap = bootstrap
        self._process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout_s: float = 120.0) -> GeneratedBurrow:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.scale_burrow", self.layout.to_json(),
             self.bootstrap], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip():
            self.stop()
            raise RuntimeError("the generated Burrow did not start")
        self.url = f"http://127.0.0.1:{int(line)}"
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def stop(self) -> None:
        if self._process is None:
            return
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def __enter__(self) -> GeneratedBurrow:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    layout = Layout.from_json(sys.argv[1])
    bootstrap = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1:9"
    asyncio.run(_serve(layout, bootstrap))


if __name__ == "__main__":
    main()
