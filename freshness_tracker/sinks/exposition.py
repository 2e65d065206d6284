"""/metrics as bytes: each snapshot is rendered once, when it is published; a scrape copies bytes.

Why: a scrape used to rebuild every sample as Python objects (`generate_latest` over the
Collector): seconds of CPU and hundreds of MB per scrape of a large snapshot that is immutable
(docs/scale.md).

- **Render once.** When a cluster's cycle is published (`prepare`, on that cycle's thread), its
  sample lines are written once: one bytes segment per family (`sinks.prometheus` defines the
  families and their values). A cluster that did not change keeps its segments, so with 20
  clusters a publication costs one cluster's render, not twenty.
- **Formats are prometheus_client's.** A scrape negotiates exactly as prometheus_client does
  (`choose_encoder`: text 0.0.4, text 1.0.0 or OpenMetrics, with name escaping). The syntax of a
  format (HELP/TYPE headers, how a sample name and its label names are written) is learnt from
  that format's own encoder on a one-sample probe family, so only label and sample values are
  written here; tests compare the result with `generate_latest` byte for byte.
- **Gzip once.** Each segment is deflated when it is rendered (sync-flushed, so deflated pieces
  join into one stream, as pigz does) and its CRC-32 kept: the gzip body of a snapshot is those
  pieces joined into a single gzip member, its CRC combined from theirs (zlib's crc32_combine),
  so nothing is compressed or checksummed again at a scrape, and a cluster that did not change
  is not compressed again when another one publishes. Big segments are kept deflated only
  (a fraction of their text's size): the first plain scrape of a published cluster inflates its
  segments once.
- **Assemble once.** The snapshot part of a format is its family headers interleaved with every
  cluster's segments, assembled once per snapshot (references, no copy); the listener sends the
  pieces with one vectored write (`http.py`), so a scrape waits for the GIL a handful of times,
  not once per piece, while cycles keep the interpreter busy.
- **Counters per snapshot.** The exporter's own counters and histogram (`per_snapshot`) change
  only when a cycle is published, so they are rendered with the snapshot part, once per
  snapshot and format, as one more segment: rendering them per scrape took little interpreter
  time but made the scrape wait for the interpreter behind every cluster's cycle.
- **Live block.** What changes between snapshots (process and Kafka client figures) is a small
  registry that prometheus_client renders at every scrape; it is appended after the snapshot
  part (and carries OpenMetrics' `# EOF`). So a scrape costs that block, the copy of the bytes
  and, for gzip, deflating that block.
"""

from __future__ import annotations

import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from freshness_tracker.domain.model import ClusterSnapshot, Snapshot
from freshness_tracker.metrics import Family, Level
from freshness_tracker.publish import SnapshotHolder
from freshness_tracker.sinks.prometheus import SeriesSet, SkipLog

__all__ = ["Answer", "CachedExposition", "gzip_wanted", "negotiate", "only_named"]

#: zlib level of the cached gzip bytes. 1 deflates /metrics several times faster than 6 for a
#: few more bytes (docs/scale.md): the time is spent on every publication, the bytes are only
#: moved.
GZIP_LEVEL = 1
#: Sample lines joined into one bytes piece at a time: bounds the render's transient memory
#: (a list of 100,000 lines costs 3× their bytes) without one piece per line.
ROWS_PER_PIECE = 4096
#: Segments up to this size keep their plain bytes (headers, roll-ups of small clusters);
#: bigger ones are kept deflated only.
KEEP_PLAIN_BYTES = 16_384
_INFLATE_LOCK = threading.Lock()
#: A gzip member header: deflate, no name, mtime 0, unknown OS.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
#: Formats kept at once (clients choose versions and escapings; each costs only its headers).
_MAX_FORMATS = 16
_PLACEHOLDER = "\x00{}\x00"
_EOF = b"# EOF\n"
#: Renders kept per cluster: the one being published and the one still served until then.
_RENDERS_KEPT = 2
#: A sample value as every prometheus_client format writes it (Go's float formatting).
_float_text: Callable[[float], str] = floatToGoString


def _deflate_last(data: bytes) -> bytes:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH)


# --- negotiation ----------------------------------------------------------------------------

#: Versions each negotiable media type is written in (prometheus_client's encoders); an Accept
#: element naming any other version is skipped, as Go's expfmt.Negotiate skips it.
_KNOWN_VERSIONS = {"text/plain": frozenset({"0.0.4", "1.0.0"}),
                   "application/openmetrics-text": frozenset({"0.0.1", "1.0.0", "2.0.0"})}


def negotiate(accept: str | None) -> tuple[Callable[[Collector], bytes], str]:
    """The encoder and Content-Type for `accept`: prometheus_client's `choose_encoder` on the
    elements it can serve. An element whose version (read as prometheus_client reads it) is
    not one it writes is skipped, as Go's expfmt.Negotiate skips it: `version=A` or
    `version=1.0.x` made `choose_encoder` raise (HTTP 500), and an unknown version was echoed
    into the Content-Type. So nothing left can raise; nothing left at all means the text
    format, as prometheus_client and Go answer a client they do not understand."""
    kept = []
    for element in (accept or "").split(","):
        media, *params = element.split(";")
        known = _KNOWN_VERSIONS.get(media.strip())
        version = next((value for key, eq, value in (p.strip().partition("=") for p in params)
                        if eq and key == "version"), None)
        if known is None or version is None or version in known:
            kept.append(element)
    return choose_encoder(",".join(kept))


_CODING = re.compile(r"\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:;(.*))?$")
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")


def _quality(params: str) -> float | None:
    """The q-value among an Accept-Encoding element's parameters (1 without one); None if it
    does not parse. Only a parameter named exactly `q` is one."""
    quality = 1.0
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            if not _QVALUE.fullmatch(value.strip()):
                return None
            quality = float(value)
    return quality


def gzip_wanted(accept_encoding: str | None) -> bool:
    """Whether to gzip (RFC 9110 12.5.3): `gzip` (or `x-gzip`, the same coding) is listed with
    a q-value above 0, and nowhere with q=0 — "not acceptable" wins over a repeat, whichever
    comes first. An element that does not parse counts for nothing; `*` is not taken as
    gzip: identity is always acceptable, so a client is never left without an answer."""
    qualities = []
    for element in (accept_encoding or "").split(","):
        match = _CODING.match(element)
        if match is not None and match.group(1).lower() in ("gzip", "x-gzip"):
            quality = _quality(match.group(2) or "")
            if quality is not None:
                qualities.append(quality)
    return bool(qualities) and min(qualities) > 0


class _OnlyNamed:
    """A registry's samples whose sample name is listed, as prometheus_client serves `name[]`:
    a family is served with those of its samples that are named (so a counter is selected by
    `x_total` or `x_created`, not by its family name `x`), and not at all without one. Unlike
    prometheus_client's `restricted_registry`, every collector is asked (it only finds those
    that describe themselves: the process collector's families were never served), and a
    family keeps its unit."""

    def __init__(self, registry: Collector, names: Sequence[str]) -> None:
        self._registry = registry
        self._names = frozenset(names)

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            samples = [s for s in metric.samples if s.name in self._names]
            if samples:
                kept = Metric(metric.name, metric.documentation, metric.type, metric.unit)
                kept.samples = samples
                yield kept


def only_named(registry: Collector, names: Sequence[str]) -> Collector:
    """`registry` restricted to the samples named in `names` (prometheus_client's `name[]`)."""
    return _OnlyNamed(registry, names)


# --- CRC-32 of a concatenation from the parts' CRCs (zlib's crc32_combine, which Python lacks)

_CRC_POLY = 0xEDB88320


def _multmodp(a: int, b: int) -> int:
    """a · b modulo the CRC-32 polynomial, reflected (zlib's multmodp); `a` is never 0."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _CRC_POLY if b & 1 else b >> 1


_X2N = [1 << 30]  # x^(2^k) mod P for k = 0..31
for _ in range(31):
    _X2N.append(_multmodp(_X2N[-1], _X2N[-1]))


def crc_shift(length: int) -> int:
    """x^(8·length) mod P: what the CRC of the bytes before a piece of `length` bytes is
    multiplied by when the piece is appended (zlib's x2nmodp(length, 3))."""
    p = 1 << 31  # x^0
    k = 3
    while length:
        if length & 1:
            p = _multmodp(_X2N[k & 31], p)
        length >>= 1
        k += 1
    return p


def crc_combine(crc: int, piece_crc: int, piece_shift: int) -> int:
    """CRC-32 of `a + b` from crc(a), crc(b) and crc_shift(len(b))."""
    return _multmodp(piece_shift, crc) ^ piece_crc


class _Segment:
    """Bytes of the exposition made once: kept deflated (sync-flushed), with their CRC-32 and
    `crc_shift` of their length, so gzip bodies are joined and checksummed without the bytes.

    The plain text of a big segment is not kept: Prometheus always asks for gzip, and 100,000
    partitions are 30 MB of text against 1 MB deflated. A plain scrape inflates it once (then it
    is kept with the segment, until the cluster publishes again).
    """

    __slots__ = ("_plain", "crc", "deflated", "length", "shift")

    def __init__(self, deflated: bytes, crc: int, length: int, plain: bytes | None) -> None:
        self.deflated = deflated
        self.crc = crc
        self.length = length
        self.shift = crc_shift(length)
        self._plain = plain

    @classmethod
    def of(cls, data: bytes) -> _Segment:
        writer = _SegmentWriter()
        writer.add(data)
        return writer.finish()

    def plain(self, counts: _Counts) -> bytes:
        """The plain bytes (inflated at the first plain scrape that needs them)."""
        with _INFLATE_LOCK:
            if self._plain is None:
                self._plain = zlib.decompressobj(-zlib.MAX_WBITS).decompress(self.deflated)
                counts.inflates += 1
            return self._plain


class _SegmentWriter:
    """Builds a _Segment from pieces as they are written, so a render never holds all of its
    plain text at once."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._deflated: list[bytes] = []
        self._plain: list[bytes] | None = []  # while small enough to keep
        self._crc = 0
        self._length = 0

    def add(self, piece: bytes) -> None:
        self._deflated.append(self._compressor.compress(piece))
        self._crc = zlib.crc32(piece, self._crc)
        self._length += len(piece)
        if self._plain is not None:
            self._plain = [*self._plain, piece] if self._length <= KEEP_PLAIN_BYTES else None

    def finish(self) -> _Segment:
        self._deflated.append(self._compressor.flush(zlib.Z_SYNC_FLUSH))  # ends on a byte
        plain = None if self._plain is None else b"".join(self._plain)
        return _Segment(b"".join(self._deflated), self._crc, self._length, plain)


def _without_eof(text: bytes) -> bytes:
    """An exposition that more families follow: OpenMetrics' `# EOF` comes once, at the end."""
    return text.removesuffix(_EOF)


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
        labels = self._family.labels
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
        self.headers = tuple(_Segment.of(s.header) for s in self.syntax)
        #: Formats that write samples alike share the clusters' rendered segments.
        self.samples_key = tuple((s.head, s.order, s.between, s.tail) for s in self.syntax)


def _render(cluster: ClusterSnapshot, families: Sequence[Family], fmt: _Format,
            static: tuple[str, ...] = ()) -> tuple[_Segment, ...]:
    """One cluster's sample lines, one segment per family (the hot loop of a publication);
    `static` are the cluster's static label values, after each row's own."""
    lines: list[list[str]] = [[] for _ in families]
    writers = [_SegmentWriter() for _ in families]
    skips = SkipLog()
    escapes: dict[str, str | None] = {}  # label value → escaped, or None: not UTF-8

    def escaped(value: str) -> str | None:
        if value in escapes:
            return escapes[value]
        out = _escape_value(value) if value.isascii() or skips.exportable((value,)) else None
        escapes[value] = out
        return out

    def flush(indices: Sequence[int]) -> None:
        for i in indices:
            if lines[i]:
                writers[i].add("".join(lines[i]).encode())
                lines[i].clear()

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
        rows = 0
        for row in level.rows(cluster):
            values = label_values(row) + static
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
            rows += 1
            if rows == ROWS_PER_PIECE:
                flush(indices)
                rows = 0
        flush(indices)
    return tuple(writer.finish() for writer in writers)


@dataclass
class _Counts:
    """How often the expensive steps ran (tests assert on them; nothing is timed)."""

    renders: int = 0  # a cluster snapshot's sample lines written (and deflated)
    assemblies: int = 0  # a format's snapshot part put together
    gzip_parts: int = 0  # a format's snapshot part joined as gzip
    inflates: int = 0  # a big segment's plain bytes made again (the first plain scrape)


class _ClusterRender:
    """One published cluster snapshot, rendered once per samples syntax."""

    def __init__(self, snapshot: ClusterSnapshot, static: tuple[str, ...] = ()) -> None:
        self.snapshot = snapshot
        self.static = static  # the cluster's static label values
        self._lock = threading.Lock()
        self._segments: dict[tuple[Any, ...], tuple[_Segment, ...]] = {}

    def segments(self, fmt: _Format, families: Sequence[Family],
                 counts: _Counts) -> tuple[_Segment, ...]:
        with self._lock:
            found = self._segments.get(fmt.samples_key)
            if found is None:
                found = _render(self.snapshot, families, fmt, self.static)
                self._segments[fmt.samples_key] = found
                counts.renders += 1
            return found


def _interleave(fmt: _Format, families: Sequence[Family], renders: Sequence[_ClusterRender],
                counts: _Counts, wanted: Callable[[Family], bool] = lambda _f: True
                ) -> list[_Segment]:
    """Each family's header, then that family's segment of every cluster."""
    per_cluster = [r.segments(fmt, families, counts) for r in renders]
    out: list[_Segment] = []
    for i, family in enumerate(families):
        if wanted(family):
            out.append(fmt.headers[i])
            out += [segments[i] for segments in per_cluster if segments[i].length]
    return out


class _Part:
    """The snapshot part of one format for one snapshot: gzip and plain chunks, each once."""

    def __init__(self, segments: Sequence[_Segment], counts: _Counts) -> None:
        self._segments = segments
        self._counts = counts
        self.length = sum(s.length for s in segments)
        self._gzip: tuple[bytes, int] | None = None
        self._plain: tuple[bytes, ...] | None = None
        self._lock = threading.Lock()

    def gzip(self) -> tuple[bytes, int]:
        """(the deflated segments joined, CRC-32 of the plain bytes), once."""
        with self._lock:
            if self._gzip is None:
                crc = 0
                for s in self._segments:
                    crc = crc_combine(crc, s.crc, s.shift)
                self._gzip = (b"".join(s.deflated for s in self._segments), crc)
                self._counts.gzip_parts += 1
            return self._gzip

    def plain(self) -> tuple[bytes, ...]:
        """The plain chunks (segments inflated at most once each), once."""
        with self._lock:
            if self._plain is None:
                self._plain = tuple(s.plain(self._counts) for s in self._segments)
            return self._plain


@dataclass(frozen=True, slots=True)
class Answer:
    """A /metrics response: send `chunks` in order (iterating yields them, for any WSGI server;
    the listener sends them with one vectored write); `length` is their total size."""

    content_type: str
    gzip: bool
    chunks: Sequence[bytes]
    length: int

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.chunks)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class CachedExposition:
    """/metrics from `holder`: the snapshot's families (`series`) and the `per_snapshot`
    registry rendered once per published snapshot, then the `live` registry rendered per
    scrape. `per_snapshot` must change only before a publication (as the cycle counters do).
    Thread-safe; no scrape waits for another's work but for the render or gzip of the same
    bytes."""

    def __init__(self, holder: SnapshotHolder, live: CollectorRegistry,
                 series: SeriesSet | None = None,
                 per_snapshot: CollectorRegistry | None = None) -> None:
        self._holder = holder
        self.live = live
        self.per_snapshot = per_snapshot
        self.series = series or SeriesSet()
        self._families = self.series.families()
        self._lock = threading.Lock()  # held for lookups only, never while rendering
        self._formats: dict[str, _Format] = {}
        #: Per cluster, the newest renders (newest first): the one being published and the one
        #: a scrape may still be reading from the previous snapshot.
        self._renders: dict[str, list[_ClusterRender]] = {}
        self._parts_of: Snapshot | None = None
        self._parts: dict[str, _Part] = {}
        self.counts = _Counts()
        self._default = self._format(None)

    # --- publication ---------------------------------------------------------------------

    def prepare(self, snapshot: ClusterSnapshot) -> None:
        """Render a cluster snapshot about to be published (call before holder.publish)."""
        render = _ClusterRender(snapshot, self.series.static_values(snapshot.cluster))
        render.segments(self._default, self._families, self.counts)
        with self._lock:
            self._keep(render)

    def published(self) -> None:
        """Forget renders no scrape will serve again (call after holder.publish): memory holds
        one render per cluster between publications, not two."""
        current = {c.cluster: c for c in self._holder.current.clusters}
        with self._lock:
            for cluster, renders in self._renders.items():
                now = current.get(cluster)
                if now is not None:
                    renders[:] = [r for r in renders if r.snapshot is now
                                  or r.snapshot.cycle_id > now.cycle_id]
            if self._parts_of is not self._holder.current:
                self._parts_of, self._parts = None, {}

    def _keep(self, render: _ClusterRender) -> None:
        held = self._renders.setdefault(render.snapshot.cluster, [])
        if held and held[0].snapshot.cycle_id > render.snapshot.cycle_id:
            return  # a late render of an older cycle never displaces a newer one
        held.insert(0, render)
        del held[_RENDERS_KEPT:]

    def _render_of(self, cluster: ClusterSnapshot) -> _ClusterRender:
        """The render of a published cluster snapshot (a new, empty one if `prepare` was
        skipped or it is older than those kept: rendered when first used)."""
        with self._lock:
            for render in self._renders.get(cluster.cluster, ()):
                if render.snapshot is cluster:
                    return render
            render = _ClusterRender(cluster, self.series.static_values(cluster.cluster))
            self._keep(render)
            return render

    # --- scrapes -------------------------------------------------------------------------

    def _format(self, accept: str | None) -> _Format:
        """The format `accept` negotiates (`negotiate`), learnt once per Content-Type."""
        encoder, content_type = negotiate(accept)
        fmt = self._formats.get(content_type)
        if fmt is None:
            if len(self._formats) >= _MAX_FORMATS:
                self._formats.clear()
            fmt = self._formats[content_type] = _Format(encoder, content_type, self._families)
        return fmt

    def answer(self, accept: str | None = None, accept_encoding: str | None = None,
               names: Sequence[str] | None = None) -> Answer:
        """The response to one scrape (prometheus_client's negotiation, `name[]` filtering)."""
        snapshot = self._holder.current
        with self._lock:
            fmt = self._format(accept)
            if self._parts_of is not snapshot:
                self._parts_of, self._parts = snapshot, {}
            part = self._parts.get(fmt.content_type) if names is None else None
        if names is not None:
            renders = [self._render_of(c) for c in snapshot.clusters]
            return self._filtered(fmt, renders, names, accept_encoding)
        if part is None:
            renders = [self._render_of(c) for c in snapshot.clusters]
            segments = _interleave(fmt, self._families, renders, self.counts)
            if self.per_snapshot is not None:
                segments.append(_Segment.of(_without_eof(fmt.encoder(self.per_snapshot))))
            built = _Part(segments, self.counts)
            with self._lock:
                if self._parts_of is snapshot:
                    part = self._parts.setdefault(fmt.content_type, built)
                    if part is built:
                        self.counts.assemblies += 1
                else:
                    part = built
        live = fmt.encoder(self.live)
        if not gzip_wanted(accept_encoding):
            return Answer(fmt.content_type, False, (*part.plain(), live),
                          part.length + len(live))
        deflated, crc = part.gzip()
        trailer = struct.pack("<II", zlib.crc32(live, crc), (part.length + len(live)) & 0xFFFFFFFF)
        out = (_GZIP_HEADER, deflated, _deflate_last(live), trailer)
        return Answer(fmt.content_type, True, out, sum(len(c) for c in out))

    def _filtered(self, fmt: _Format, renders: Sequence[_ClusterRender], names: Sequence[str],
                  accept_encoding: str | None) -> Answer:
        """`?name[]=...`: only the named families (rare: federation, debugging), not cached."""
        wanted = set(names)  # the snapshot's families are gauges: a sample is named as its family
        segments = _interleave(fmt, self._families, renders, self.counts,
                               lambda f: f.name in wanted)
        body = b"".join(s.plain(self.counts) for s in segments)
        if self.per_snapshot is not None:
            body += _without_eof(fmt.encoder(only_named(self.per_snapshot, names)))
        body += fmt.encoder(only_named(self.live, names))
        if gzip_wanted(accept_encoding):
            out = _GZIP_HEADER + _deflate_last(body) + struct.pack(
                "<II", zlib.crc32(body), len(body) & 0xFFFFFFFF)
            return Answer(fmt.content_type, True, (out,), len(out))
        return Answer(fmt.content_type, False, (body,), len(body))
