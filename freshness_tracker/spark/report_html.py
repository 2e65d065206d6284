"""The report's outputs from the collected results: tables (Parquet + CSV), charts, one HTML page.

Everything here runs on the driver over small pandas frames (one row per consumer, topic or
partition); the page is self-contained (inline CSS, charts as base64 PNG) so it can be mailed or
attached to a ticket. Charts use matplotlib (extra: report).
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import html
import importlib.util
import os
import unicodedata
from collections.abc import Sequence
from typing import Any

import pandas as pd

from freshness_tracker.domain.names import printable
from freshness_tracker.domain.slo import INSUFFICIENT, Objective

__all__ = ["build_tables", "fmt_duration", "spreadsheet_safe", "worst_consumers", "write_csv",
           "write_outputs"]

_ARRAYS = ["breach_starts", "breach_ends", "breach_peaks", "no_data_starts", "no_data_ends"]


def fmt_duration(ms: Any) -> str:
    """12 s, 4 m 05 s, 3 h 20 m, 2 d 04 h; blank for unknown."""
    if ms is None or pd.isna(ms):
        return ""
    s = round(float(ms) / 1000)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} m {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} m"
    return f"{s // 86400} d {s % 86400 // 3600:02d} h"


def _utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _badness(frame: pd.DataFrame) -> pd.DataFrame:
    """Missed objectives first, then most time over objective, then the highest p99."""
    if frame.empty:
        return frame
    key = pd.DataFrame({
        "a": frame["met"].map(lambda m: 0 if m is False else 1),
        "b": -frame["over_ms"].fillna(0).astype(float),
        "c": -frame["p99_ms"].fillna(-1).astype(float),
        "d": -frame["max_ms"].fillna(-1).astype(float),
    }, index=frame.index)
    order = key.sort_values(["a", "b", "c", "d"], kind="stable").index
    return frame.loc[order].reset_index(drop=True)


def build_tables(consumers: pd.DataFrame, topics: pd.DataFrame, partitions: pd.DataFrame,
                 options: Any) -> dict[str, pd.DataFrame]:
    """consumers, topics, partitions (the worst per consumer), data_loss and episodes."""
    for frame in (consumers, topics):
        if not frame.empty:
            frame["met"] = frame["met"].map(
                lambda m: None if m is None or pd.isna(m) else bool(m)).astype(object)
    loss = partitions[partitions["data_loss_samples"].fillna(0) > 0].copy()
    worst = partitions[partitions["samples"] > 0].sort_values(
        ["cluster", "consumer", "max_ms"], ascending=[True, True, False])
    worst = worst.groupby(["cluster", "consumer"], sort=False).head(options.worst_partitions)
    worst = worst.assign(rank=worst.groupby(["cluster", "consumer"]).cumcount() + 1)
    if not consumers.empty:
        counts = loss.groupby(["cluster", "consumer"]).size().rename("data_loss_partitions")
        consumers = consumers.join(counts, on=["cluster", "consumer"])
        labels = worst.groupby(["cluster", "consumer"]).apply(
            lambda g: "; ".join(f"{t}[{p}] max {fmt_duration(m)}"
                                for t, p, m in zip(g["topic"], g["partition"], g["max_ms"],
                                                   strict=True)),
            include_groups=False).rename("worst_partitions")
        consumers = consumers.join(labels, on=["cluster", "consumer"])
        consumers["data_loss_partitions"] = consumers["data_loss_partitions"].fillna(0) \
            .astype(int)
    if not topics.empty:
        counts = loss.groupby(["cluster", "consumer", "topic"]).size() \
            .rename("data_loss_partitions")
        topics = topics.join(counts, on=["cluster", "consumer", "topic"])
        topics["data_loss_partitions"] = topics["data_loss_partitions"].fillna(0).astype(int)
    episodes = pd.concat([_episodes(consumers, "consumer"), _episodes(topics, "topic")],
                         ignore_index=True)
    for name in ("first_loss_ms", "last_loss_ms"):
        loss[name.replace("_ms", "")] = pd.to_datetime(loss[name], unit="ms", utc=True)
    for frame in (consumers, topics):
        if not frame.empty:
            frame["objective_short"] = [
                "" if pd.isna(ms) else f"≤ {fmt_duration(ms)} for {target * 100:g}%"
                for ms, target in zip(frame["objective_ms"], frame["target"], strict=True)]
    return {
        "consumers": _badness(consumers),
        "topics": _badness(topics),
        "partitions": worst.reset_index(drop=True),
        "data_loss": loss.drop(columns=["first_loss_ms", "last_loss_ms"]).reset_index(drop=True),
        "episodes": episodes,
    }


def _episodes(frame: pd.DataFrame, level: str) -> pd.DataFrame:
    rows = []
    for r in frame.itertuples(index=False):
        topic = getattr(r, "topic", None)
        for s, e, peak in zip(r.breach_starts, r.breach_ends, r.breach_peaks, strict=True):
            rows.append((level, r.cluster, r.consumer, topic, "breach", s, e, e - s, peak))
        for s, e in zip(r.no_data_starts, r.no_data_ends, strict=True):
            rows.append((level, r.cluster, r.consumer, topic, "no_data", s, e, e - s, None))
    out = pd.DataFrame(rows, columns=["level", "cluster", "consumer", "topic", "kind", "start_ms",
                                      "end_ms", "duration_ms", "peak_ms"])
    out["start"] = pd.to_datetime(out["start_ms"], unit="ms", utc=True)
    out["end"] = pd.to_datetime(out["end_ms"], unit="ms", utc=True)
    return out


def worst_consumers(consumers: pd.DataFrame, k: int) -> list[tuple[str, str]]:
    """The first k consumers (already in badness order) that have samples."""
    if consumers.empty:
        return []
    measured = consumers[consumers["samples"] > 0]
    return [(str(c), str(g)) for c, g in zip(measured["cluster"].head(k),
                                             measured["consumer"].head(k), strict=True)]


# --- outputs ------------------------------------------------------------------------------

#: A cell starting with one of these is a formula to a spreadsheet (OWASP's CSV-injection list,
#: the full-width forms some spreadsheets also take, and a newline, which Kafka allows first in
#: a group id).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def spreadsheet_safe(value: Any) -> Any:
    """A text cell a spreadsheet shows as text: prefixed with `'` when it would start a formula.

    Group, topic and cluster names come from Burrow (Kafka allows `=HYPERLINK(…)` as a group
    id), and an operator opens the CSV in a spreadsheet; there a leading `=`, `+`, `-` or `@`
    runs as a formula. The quote is what OWASP recommends: the spreadsheet shows the name, the
    quote says it was escaped. Spreadsheets skip leading blanks and invisible characters (a
    space, NBSP, U+3000, a BOM, a zero-width space, NUL) before reading `=`, so the first
    significant character decides. Other values are returned as they are."""
    if isinstance(value, str) and (value.startswith(_FORMULA_START)
                                   or _significant(value).startswith(_FORMULA_START)):
        return "'" + value
    return value


#: Categories a spreadsheet may skip before the first character it reads: separators
#: (spaces), format characters (BOM, zero-width) and control characters (NUL).
_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cf", "Cc"})


def _significant(text: str) -> str:
    """`text` from its first character that is neither blank nor invisible."""
    for i, char in enumerate(text):
        if not char.isspace() and unicodedata.category(char) not in _INVISIBLE:
            return text[i:]
    return ""


def write_csv(frame: pd.DataFrame, path: str) -> None:
    """The one way the report writes a CSV: every text cell through `spreadsheet_safe` (the
    Parquet files beside it keep the names exactly), and every text cell quoted: pandas leaves
    a bare carriage return unquoted, which a spreadsheet reads as a new row, so a name
    `x\r=cmd…` would start a row with a formula."""
    safe = frame.copy()
    for column in safe.columns:
        if pd.api.types.is_object_dtype(safe[column]) or \
                pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(spreadsheet_safe)
    safe.to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)


#: Said once when the report runs without its charts.
CHARTS_MISSING = ("matplotlib is not installed, so the report has its tables but no charts: "
                  "pip install 'freshness-tracker[report]'")


def charts_available() -> bool:
    """The charts need matplotlib (the `report` extra); the tables do not."""
    return importlib.util.find_spec("matplotlib") is not None


def write_outputs(out: str, tables: dict[str, pd.DataFrame], samples: pd.DataFrame,
                  worst: list[tuple[str, str]], objectives: Sequence[Objective], options: Any,
                  history: str, rows: int) -> dict[str, str]:
    os.makedirs(out, exist_ok=True)
    files: dict[str, str] = {}
    for name, frame in tables.items():
        flat = frame.drop(columns=[c for c in _ARRAYS if c in frame.columns])
        parquet = os.path.join(out, f"{name}.parquet")
        flat.to_parquet(parquet, index=False)
        write_csv(flat, os.path.join(out, f"{name}.csv"))
        files[name] = parquet
    pngs: dict[str, bytes] = {}
    if charts_available():
        from freshness_tracker.spark import charts

        os.makedirs(os.path.join(out, "charts"), exist_ok=True)
        pngs = {
            "freshness": charts.freshness_over_time(tables["consumers"], samples, worst, options),
            "timeline": charts.breach_timeline(tables["consumers"], options),
        }
    for name, png in pngs.items():
        path = os.path.join(out, "charts", f"{name}.png")
        with open(path, "wb") as f:
            f.write(png)
        files[f"chart_{name}"] = path
    page = render_html(tables, pngs, objectives, options, history, rows)
    files["html"] = os.path.join(out, "report.html")
    with open(files["html"], "w", encoding="utf-8") as f:
        f.write(page)
    return files


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1440px;color:#1d2330;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
#dde1e8;padding-bottom:4px}.meta{color:#5b6472}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}.card{border:1px solid #dde1e8;
border-radius:8px;padding:10px 16px;min-width:150px}.card b{display:block;font-size:26px}
.bad b{color:#c0392b}.good b{color:#1e8449}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{padding:4px 8px;
border-bottom:1px solid #eceff3;text-align:left;white-space:nowrap}th{background:#f5f7fa;
position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.missed td{background:#fdecea}.pill{border-radius:9px;padding:1px 8px;font-weight:600}
.pill.met{background:#d5f5e3;color:#1e8449}.pill.missed{background:#f5b7b1;color:#922b21}
.pill.none{background:#eceff3;color:#5b6472}img{max-width:100%;border:1px solid #eceff3}
.wrap{overflow-x:auto;max-height:640px}details{margin-top:12px}
td.w{white-space:normal;min-width:280px;max-width:420px}
"""


def _pill(verdict: Any) -> str:
    if verdict == "met":
        return '<span class="pill met">met</span>'
    if verdict == "missed":
        return '<span class="pill missed">missed</span>'
    if verdict == INSUFFICIENT:
        return f'<span class="pill none">{INSUFFICIENT}</span>'
    return '<span class="pill none">no objective</span>'


def _text(value: str) -> str:
    """A name as page text: HTML-escaped, and every control or format character (a newline, a
    bidi override) written as its escape, as on the status page's terminal table."""
    return html.escape(printable(value), quote=True)


def _table(frame: pd.DataFrame, columns: list[tuple[str, str, str]], limit: int = 500) -> str:
    """columns: (header, column, kind) with kind in text, dur, pct, num, met, wrap."""
    if frame.empty:
        return "<p class=meta>None.</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _, _ in columns)
    body = []
    for _, row in frame.head(limit).iterrows():
        cells = []
        for _, col, kind in columns:
            v = row.get(col)
            if kind == "dur":
                cells.append(f'<td class="n">{fmt_duration(v)}</td>')
            elif kind == "pct":
                text = "" if v is None or pd.isna(v) else f"{float(v) * 100:.3f}%"
                cells.append(f'<td class="n">{text}</td>')
            elif kind == "num":
                text = "" if v is None or pd.isna(v) else f"{v:,.0f}"
                cells.append(f'<td class="n">{text}</td>')
            elif kind == "met":
                cells.append(f"<td>{_pill(v)}</td>")
            else:
                text = "" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)
                cls = ' class="w"' if kind == "wrap" else ""
                cells.append(f"<td{cls}>{_text(text)}</td>")
        missed = ' class="missed"' if row.get("verdict") == "missed" else ""
        body.append(f"<tr{missed}>{''.join(cells)}</tr>")
    more = f"<p class=meta>{len(frame) - limit} more rows in the CSV.</p>" \
        if len(frame) > limit else ""
    return f'<div class="wrap"><table><tr>{head}</tr>{"".join(body)}</table></div>{more}'


_SLO_COLUMNS = [
    ("status", "verdict", "met"), ("attainment (time with data)", "compliance", "pct"),
    ("no data", "no_data_share", "pct"), ("time over objective", "over_ms", "dur"),
    ("share over", "over_share", "pct"), ("no-data time", "no_data_ms", "dur"),
    ("longest breach", "longest_breach_ms", "dur"),
    ("breaches", "breaches", "num"), ("samples", "samples", "num"), ("p50", "p50_ms", "dur"),
    ("p95", "p95_ms", "dur"), ("p99", "p99_ms", "dur"), ("max", "max_ms", "dur"),
    ("data-loss partitions", "data_loss_partitions", "num"),
]


def render_html(tables: dict[str, pd.DataFrame], pngs: dict[str, bytes],
                objectives: Sequence[Objective], options: Any, history: str, rows: int) -> str:
    c = tables["consumers"]
    met = int((c["verdict"] == "met").sum()) if len(c) else 0
    missed = int((c["verdict"] == "missed").sum()) if len(c) else 0
    unjudged = int((c["verdict"] == INSUFFICIENT).sum()) if len(c) else 0
    windows = float(c["window_ms"].sum()) if len(c) else 0.0
    no_data = float(c["no_data_ms"].sum()) / windows if windows else 0.0
    loss = len(tables["data_loss"])
    window = options.end_ms - options.start_ms

    def img(name: str, alt: str) -> str:
        if name not in pngs:
            return f'<p class=meta>No chart ({html.escape(alt)}): {CHARTS_MISSING}.</p>'
        data = base64.b64encode(pngs[name]).decode()
        return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    cards = (
        f'<div class="card bad"><b>{missed}</b>consumers missed</div>'
        f'<div class="card good"><b>{met}</b>consumers met</div>'
        f'<div class="card"><b>{unjudged}</b>{INSUFFICIENT}</div>'
        f'<div class="card"><b>{len(c) - met - missed - unjudged}</b>without objective</div>'
        f'<div class="card{" bad" if no_data else ""}"><b>{no_data * 100:.1f}%</b>of the '
        "window without data</div>"
        f'<div class="card{" bad" if loss else ""}"><b>{loss}</b>data-loss partitions</div>'
        f'<div class="card"><b>{rows:,}</b>history rows</div>'
    )
    objective_rows = "".join(
        f"<tr><td>{i + 1}</td><td>{_text(o.consumer)}</td>"
        f"<td>{_text(o.topic or 'all topics')}</td>"
        f'<td class="n">{fmt_duration(o.freshness_ms)}</td>'
        f'<td class="n">{float(o.target) * 100:.6g}%</td></tr>'
        for i, o in enumerate(objectives)) or "<tr><td colspan=5>No objectives given.</td></tr>"
    gap = f"{options.gap_cycles:g} cycles" + (
        f" of {fmt_duration(options.cycle_ms)}" if options.cycle_ms else
        " (cycle inferred per series)")
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>Consumer freshness report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Consumer freshness report</h1>",
        f'<p class="meta">{_utc(options.start_ms)} → {_utc(options.end_ms)} '
        f"({fmt_duration(window)}) · history {_text(history)} · a gap longer than "
        f"{html.escape(gap)} counts as no data · generated "
        f"{dt.datetime.now(tz=dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        f'<div class="cards">{cards}</div>',
        "<h2>Freshness over time: the worst consumers</h2>",
        img("freshness", "freshness of the worst consumers over the window"),
        "<h2>Breach timeline</h2>",
        img("timeline", "when each consumer was over its objective or had no data"),
        "<h2>Consumers</h2>",
        _table(c, [("cluster", "cluster", "text"), ("consumer", "consumer", "text"),
                   ("objective", "objective_short", "text"), *_SLO_COLUMNS]),
        "<h2>Data loss</h2>",
        _table(tables["data_loss"], [
            ("cluster", "cluster", "text"), ("consumer", "consumer", "text"),
            ("topic", "topic", "text"), ("partition", "partition", "num"),
            ("samples with loss", "data_loss_samples", "num"),
            ("max lost records", "max_lost_records", "num"),
            ("first seen", "first_loss", "text"), ("last seen", "last_loss", "text")]),
        "<h2>Worst partitions</h2>",
        _table(tables["partitions"], [
            ("cluster", "cluster", "text"), ("consumer", "consumer", "text"),
            ("rank", "rank", "num"), ("topic", "topic", "text"),
            ("partition", "partition", "num"), ("samples", "samples", "num"),
            ("p99", "p99_ms", "dur"), ("max", "max_ms", "dur"),
            ("samples with loss", "data_loss_samples", "num")]),
        f"<details><summary>Per topic ({len(tables['topics'])})</summary>",
        _table(tables["topics"], [("cluster", "cluster", "text"),
                                  ("consumer", "consumer", "text"), ("topic", "topic", "text"),
                                  ("objective", "objective_short", "text"), *_SLO_COLUMNS]),
        "</details>",
        "<h2>Objectives</h2><table><tr><th>#</th><th>consumer</th><th>topic</th>"
        f"<th>freshness ≤</th><th>target</th></tr>{objective_rows}</table>",
        "<h2>How to read this</h2><p class=meta>Freshness is the age of the oldest record a "
        "group has not committed. A consumer's series is its worst partition at each cycle (over "
        "the topics its objective selects). Each sample holds until the next one; a gap longer "
        "than the limit above is <b>no data</b>: neither good nor bad, shown as its share of the "
        "window. Attainment = time within the objective ÷ time with data. <b>missed</b> when the "
        "time over the objective alone exceeds the window's error budget ((1 − target) × "
        f"window); else <b>{INSUFFICIENT}</b> when less than "
        f"{float(options.min_coverage) * 100:g}% of the window has data; else <b>met</b> when "
        "attainment ≥ target, <b>missed</b> otherwise. "
        "The first objective matching a consumer (and topic) judges it. Percentiles are over "
        "samples. Data-loss freshness is a lower bound.</p>",
        "</body></html>",
    ]
    return "\n".join(parts)
