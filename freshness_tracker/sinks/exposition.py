"""/metrics as bytes: each snapshot is rendered once, when it is published; a scrape copies bytes.

Why: a scrape used to rebuild every sample as Python objects (`generate_latest` over the
Collector): 18–21 s and a 658 MB peak for 100,000 partitions, per scrape, of a snapshot that is
immutable.

- **Render once.** When a cluster's cycle is published (`prepare`, on that cycle's thread), its
  sample lines are written once: one bytes segment per family (`sinks.prometheus` defines the
  families and their values). A cluster that did not change keeps its segments, so with 20
  clusters a publication costs one cluster's render, not twenty.
- **Formats are prometheus_client's.** A scrape negotiates exactly as prometheus_client does
  (`choose_encoder`: text 0.0.4, text 1.0.0 or OpenMetrics, with name escaping). The syntax of a
  format (HELP/TYPE headers, how a sample name and its label names are written) is learnt from
  that format's own encoder on a one-sample probe family, so only label and sample values are
  written here; tests compare the result with `generate_latest` byte for byte.
- **Assemble once, gzip once.** The snapshot part of a format is its family headers interleaved
  with every cluster's segments, assembled once per snapshot (references, no copy). Its gzip form
  is made once per snapshot, lazily: each segment is deflated once, sync-flushed, and the pieces
  are joined into a single gzip member (as pigz does); a cluster that did not change is not
  compressed again.
- **Live block.** What changes between snapshots (the exporter's counters, process and Kafka
  client figures) is a small registry that prometheus_client renders at every scrape; it is
  appended after the snapshot part (and carries OpenMetrics' `# EOF`). So a scrape costs that
  block, the copy of the bytes and, for gzip, deflating that block.
"""

from __future__ import annotations

import logging
import struct
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from freshness_tracker.domain.model import ClusterSnapshot, Snapshot
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.prometheus import Family, Level, SeriesSet, SkipLog

__all__ = ["Answer", "CachedExposition"]

log = logging.getLogger(__name__)

#: zlib level of the cached gzip bytes: made once per snapshot, so a little more effort than
#: the fastest pays for itself in bytes on the wire at every scrape.
GZIP_LEVEL = 6
#: A gzip member header: deflate, no name, mtime 0, unknown OS.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
#: Formats kept at once (clients choose versions and escapings; each costs only its headers).
_MAX_FORMATS = 16
_PLACEHOLDER = "\x00{}\x00"
#: A sample value as every prometheus_client format writes it (Go's float formatting).
_float_text: Callable[[float], str] = floatToGoString


def _deflate(data: bytes) -> bytes:
    """Raw deflate of `data` ending on a byte boundary (sync flush): pieces made this way
    concatenate into one valid deflate stream."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)


def _deflate_last(data: bytes) -> bytes:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH)


def _braces(text: str) -> str:
    """`text` as a literal inside a str.format template."""
    return text.replace("{", "{{").replace("}", "}}")


def _escape_value(value: str) -> str:
    """A label value as both text formats write it (prometheus_client: ALLOWUTF8 escaping)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class _Probe(Collector):
    def __init__(self, family: Family) -> None:
        self._family = family

    def collect(self) -> list[Metric]:
        labels = self._family.level.labels
        metric = GaugeMetricFamily(self._family.name, self._family.doc, labels=list(labels))
        metric.add_metric([_PLACEHOLDER.format(i) for i in range(len(labels))], 0.0)
        return [metric]


@dataclass(frozen=True, slots=True)
class _Syntax:
    """How one format writes one family: its header, and a sample line as
    `head + v[order[0]] + between[0] + v[order[1]] + ... + tail + value + newline`."""

    header: bytes
    head: str
    order: tuple[int, ...]
    between: tuple[str, ...]
    tail: str

    @classmethod
    def learn(cls, encoder: Callable[[Collector], bytes], family: Family) -> _Syntax:
        text = encoder(_Probe(family)).decode()
        lines = text.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        sample = lines[at]
        suffix = " " + _float_text(0.0) + "\n"
        if not sample.endswith(suffix):
            raise ValueError(f"unexpected sample syntax {sample!r}")
        pieces: list[str] = []
        order: list[int] = []
        rest = sample[: -len(suffix)] + " "
        while "\x00" in rest:
            before, _, rest = rest.partition("\x00")
            index, _, rest = rest.partition("\x00")
            pieces.append(before)
            order.append(int(index))
        header = "".join(lines[:at]).encode()
        if not pieces:  # no labels: the whole sample up to its value is the head
            return cls(header, rest, (), (), "")
        return cls(header, pieces[0], tuple(order), tuple(pieces[1:]), rest)


class _Format:
    """One negotiated format: its encoder (for the live block) and its families' syntax."""

    def __init__(self, encoder: Callable[[Collector], bytes], content_type: str,
                 families: Sequence[Family]) -> None:
        self.encoder = encoder
        self.content_type = content_type
        self.syntax = tuple(_Syntax.learn(encoder, f) for f in families)
        #: Formats that write samples alike share the clusters' rendered segments.
        self.samples_key = tuple((s.head, s.order, s.between, s.tail) for s in self.syntax)
        self._deflated_headers: tuple[bytes, ...] | None = None

    def deflated_headers(self) -> tuple[bytes, ...]:
        if self._deflated_headers is None:
            self._deflated_headers = tuple(_deflate(s.header) for s in self.syntax)
        return self._deflated_headers


def _render(cluster: ClusterSnapshot, families: Sequence[Family], fmt: _Format
            ) -> tuple[bytes, ...]:
    """One cluster's sample lines, one bytes segment per family (the hot loop of a publish)."""
    lines: list[list[str]] = [[] for _ in families]
    skips = SkipLog()
    escapes: dict[str, str | None] = {}  # label value → escaped, or None: not UTF-8

    def escaped(value: str) -> str | None:
        if value in escapes:
            return escapes[value]
        out = _escape_value(value) if value.isascii() or skips.exportable((value,)) else None
        escapes[value] = out
        return out

    floats: dict[float | str, str] = {}  # sample value → its text (0.0 and -0.0 apart)
    levels: dict[Level, list[int]] = {}
    for i, family in enumerate(families):
        levels.setdefault(family.level, []).append(i)
    for level, indices in levels.items():
        first = fmt.syntax[indices[0]]
        if any((fmt.syntax[i].order, fmt.syntax[i].between, fmt.syntax[i].tail)
               != (first.order, first.between, first.tail) for i in indices):
            raise ValueError(f"families of level {level.name} write their labels differently")
        order = first.order
        template = "{}".join(_braces(p) for p in ("", *first.between, first.tail))
        outputs = [(lines[i], fmt.syntax[i].head, families[i].value) for i in indices]
        label_values = level.labeller
        for row in level.rows(cluster):
            values = label_values(row)
            try:
                texts = [escapes[values[i]] for i in order]
            except KeyError:
                texts = [escaped(values[i]) for i in order]
            if None in texts:
                continue
            labels = template.format(*texts)
            for out, head, value_of in outputs:
                value = value_of(row)
                if value is not None:
                    key = value if value else repr(value)
                    text = floats.get(key)
                    if text is None:
                        text = floats[key] = _float_text(value)
                    out.append(head + labels + text + "\n")
    return tuple("".join(family_lines).encode() for family_lines in lines)


class _ClusterRender:
    """One published cluster snapshot, rendered (per samples syntax) and deflated, lazily."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self._lock = threading.Lock()
        self._segments: dict[tuple[Any, ...], tuple[bytes, ...]] = {}
        self._deflated: dict[tuple[Any, ...], tuple[bytes, ...]] = {}

    def segments(self, fmt: _Format, families: Sequence[Family],
                 counts: _Counts) -> tuple[bytes, ...]:
        with self._lock:
            found = self._segments.get(fmt.samples_key)
            if found is None:
                found = _render(self.snapshot, families, fmt)
                self._segments[fmt.samples_key] = found
                counts.renders += 1
            return found

    def deflated(self, fmt: _Format, families: Sequence[Family],
                 counts: _Counts) -> tuple[bytes, ...]:
        segments = self.segments(fmt, families, counts)
        with self._lock:
            found = self._deflated.get(fmt.samples_key)
            if found is None:
                found = tuple(_deflate(s) if s else b"" for s in segments)
                self._deflated[fmt.samples_key] = found
                counts.deflates += 1
            return found


@dataclass
class _Counts:
    """How often the expensive steps ran (tests assert on them; nothing is timed)."""

    renders: int = 0  # a cluster snapshot's sample lines written
    deflates: int = 0  # a cluster snapshot's segments gzipped
    assemblies: int = 0  # a format's snapshot part put together
    gzip_parts: int = 0  # a format's snapshot part gzipped (its CRC computed)


class _Part:
    """The snapshot part of one format for one snapshot: plain chunks, and gzip chunks once."""

    def __init__(self, fmt: _Format, families: Sequence[Family],
                 renders: Sequence[_ClusterRender], counts: _Counts) -> None:
        self._fmt = fmt
        self._families = families
        self._renders = renders
        self._counts = counts
        per_cluster = [r.segments(fmt, families, counts) for r in renders]
        chunks: list[bytes] = []
        for i, syntax in enumerate(fmt.syntax):
            chunks.append(syntax.header)
            chunks += [segments[i] for segments in per_cluster if segments[i]]
        self.chunks = tuple(chunks)
        self.length = sum(len(c) for c in chunks)
        self._gzip: tuple[tuple[bytes, ...], int] | None = None
        self._lock = threading.Lock()

    def gzip(self) -> tuple[tuple[bytes, ...], int]:
        """(deflated chunks, CRC-32 of the plain chunks), made once."""
        with self._lock:
            if self._gzip is None:
                headers = self._fmt.deflated_headers()
                per_cluster = [r.deflated(self._fmt, self._families, self._counts)
                               for r in self._renders]
                chunks: list[bytes] = []
                for i in range(len(self._fmt.syntax)):
                    chunks.append(headers[i])
                    chunks += [deflated[i] for deflated in per_cluster if deflated[i]]
                crc = 0
                for chunk in self.chunks:
                    crc = zlib.crc32(chunk, crc)
                self._gzip = (tuple(chunks), crc)
                self._counts.gzip_parts += 1
            return self._gzip


@dataclass(frozen=True, slots=True)
class Answer:
    """A /metrics response: send `chunks` in order; `length` is their total size."""

    content_type: str
    gzip: bool
    chunks: Sequence[bytes]
    length: int

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class CachedExposition:
    """/metrics from `holder`: the snapshot's families (`series`) rendered once per published
    snapshot, then the `live` registry rendered per scrape. Thread-safe."""

    def __init__(self, holder: SnapshotHolder, live: CollectorRegistry,
                 series: SeriesSet | None = None) -> None:
        self._holder = holder
        self.live = live
        self.series = series or SeriesSet()
        self._families = self.series.families()
        self._lock = threading.Lock()
        self._formats: dict[str, _Format] = {}
        self._renders: dict[str, _ClusterRender] = {}
        self._parts_of: Snapshot | None = None
        self._parts: dict[str, _Part] = {}
        self.counts = _Counts()
        self._default = self._format(None)

    # --- publication ---------------------------------------------------------------------

    def prepare(self, snapshot: ClusterSnapshot) -> None:
        """Render a cluster snapshot about to be published (call before holder.publish)."""
        render = _ClusterRender(snapshot)
        render.segments(self._default, self._families, self.counts)
        with self._lock:
            self._keep(render)

    def _keep(self, render: _ClusterRender) -> None:
        held = self._renders.get(render.snapshot.cluster)
        if held is None or held.snapshot.cycle_id <= render.snapshot.cycle_id:
            self._renders[render.snapshot.cluster] = render

    def _render_of(self, cluster: ClusterSnapshot) -> _ClusterRender:
        """The render of a published cluster snapshot (made here if `prepare` was skipped)."""
        held = self._renders.get(cluster.cluster)
        if held is not None and held.snapshot is cluster:
            return held
        render = _ClusterRender(cluster)
        self._keep(render)
        return render

    # --- scrapes -------------------------------------------------------------------------

    def _format(self, accept: str | None) -> _Format:
        encoder, content_type = choose_encoder(accept or "")
        fmt = self._formats.get(content_type)
        if fmt is None:
            fmt = _Format(encoder, content_type, self._families)
            if len(self._formats) >= _MAX_FORMATS:
                self._formats.clear()
            self._formats[content_type] = fmt
        return fmt

    def answer(self, accept: str | None = None, accept_encoding: str | None = None,
               names: Sequence[str] | None = None) -> Answer:
        """The response to one scrape (prometheus_client's negotiation, `name[]` filtering)."""
        snapshot = self._holder.current
        with self._lock:
            fmt = self._format(accept)
            if names is None:
                part = self._part(snapshot, fmt)
            else:
                part = None
                renders = [self._render_of(c) for c in snapshot.clusters]
        if part is None:
            return self._filtered(fmt, renders, names or (), accept_encoding)
        live = fmt.encoder(self.live)
        if not gzip_accepted(accept_encoding or ""):
            return Answer(fmt.content_type, False, (*part.chunks, live),
                          part.length + len(live))
        chunks, crc = part.gzip()
        trailer = struct.pack("<II", zlib.crc32(live, crc), (part.length + len(live)) & 0xFFFFFFFF)
        out = (_GZIP_HEADER, *chunks, _deflate_last(live), trailer)
        return Answer(fmt.content_type, True, out, sum(len(c) for c in out))

    def _part(self, snapshot: Snapshot, fmt: _Format) -> _Part:
        if self._parts_of is not snapshot:
            self._parts_of, self._parts = snapshot, {}
        part = self._parts.get(fmt.content_type)
        if part is None:
            renders = [self._render_of(c) for c in snapshot.clusters]
            part = _Part(fmt, self._families, renders, self.counts)
            self._parts[fmt.content_type] = part
            self.counts.assemblies += 1
        return part

    def _filtered(self, fmt: _Format, renders: Sequence[_ClusterRender], names: Sequence[str],
                  accept_encoding: str | None) -> Answer:
        """`?name[]=...`: only the named families (rare: federation, debugging), not cached."""
        wanted = set(names)
        per_cluster = [r.segments(fmt, self._families, self.counts) for r in renders]
        chunks: list[bytes] = []
        for i, family in enumerate(self._families):
            if family.name in wanted:
                chunks.append(fmt.syntax[i].header)
                chunks += [segments[i] for segments in per_cluster if segments[i]]
        chunks.append(fmt.encoder(self.live.restricted_registry(names)))
        body = b"".join(chunks)
        if gzip_accepted(accept_encoding or ""):
            out = _GZIP_HEADER + _deflate_last(body) + struct.pack(
                "<II", zlib.crc32(body), len(body) & 0xFFFFFFFF)
            return Answer(fmt.content_type, True, (out,), len(out))
        return Answer(fmt.content_type, False, (body,), len(body))
