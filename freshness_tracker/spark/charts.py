"""The report's two charts as PNG bytes (matplotlib, Agg: no display needed).

- freshness over time of the worst consumers: one panel each, the held (step) freshness, the
  objective as a dashed line, breaches shaded red and no-data stretches grey;
- the breach timeline: one lane per consumer, red where over its objective, grey for no data.

Names come from Burrow: every text carrying one is drawn as written (`parse_math=False`: a
group named `$\\foo$` is no mathtext, which would fail the whole report) with its control
characters escaped (`printable`).
"""

from __future__ import annotations

import functools
import io
from typing import Any

import pandas as pd

from freshness_tracker.domain.names import printable

__all__ = ["breach_timeline", "freshness_over_time"]

_RED, _GREY, _GREEN, _BLUE = "#d62728", "#b8bec8", "#d5f5e3", "#1f5fa8"
_UNITS = [(1000, "s"), (60_000, "min"), (3_600_000, "h"), (86_400_000, "d")]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def _unit(max_ms: float) -> tuple[int, str]:
    """The largest unit of which `max_ms` is at least two (seconds at the least)."""
    return max((u for u in _UNITS if max_ms >= 2 * u[0]), default=_UNITS[0])


def _dates(ms: Any) -> Any:
    return pd.to_datetime(pd.Series(ms, dtype="int64"), unit="ms", utc=True).dt.tz_localize(None)


_DAY_MS = 86_400_000


@functools.cache
def _epoch() -> float:
    import matplotlib.dates as mdates

    return float(mdates.date2num(_dates([0]).iloc[0]))  # type: ignore[no-untyped-call]


def _num(ms: int) -> float:
    """matplotlib's date number (days since its epoch) of an epoch millisecond."""
    return _epoch() + ms / _DAY_MS


def _bands(ax: Any, spans: list[tuple[int, int]], min_ms: float = 0.0, **style: Any) -> None:
    """Full-height bands over [start, end) spans: one collection, however many spans."""
    if spans:
        ax.broken_barh([(_num(s), max(e - s, min_ms) / _DAY_MS) for s, e in spans], (0, 1),
                       transform=ax.get_xaxis_transform(), **style)


def _date_axis(ax: Any) -> None:
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]


def _broken_at(series: pd.DataFrame, gaps: list[tuple[int, int]]) -> pd.DataFrame:
    """The series with a NaN at the start of every no-data stretch, so the held line stops
    there instead of bridging the gap."""
    if not gaps:
        return series
    breaks = pd.DataFrame({"t": [s for s, _ in gaps], "value": [float("nan")] * len(gaps)})
    return pd.concat([series[["t", "value"]], breaks], ignore_index=True).sort_values(
        "t", kind="stable")


def _empty(text: str) -> bytes:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=12, color="#5b6472")
    return _png(fig)


def _spans(row: Any, start: str, end: str) -> list[tuple[int, int]]:
    return list(zip(getattr(row, start), getattr(row, end), strict=True)) if row is not None else []


def freshness_over_time(consumers: pd.DataFrame, samples: pd.DataFrame,
                        worst: list[tuple[str, str]], options: Any) -> bytes:
    if not worst or samples.empty:
        return _empty("No samples in the window.")
    plt = _plt()
    fig, axes = plt.subplots(len(worst), 1, figsize=(11, 2.1 * len(worst) + 0.4), sharex=True,
                             squeeze=False)
    lo, hi = _dates([options.start_ms, options.end_ms])
    by_key = {(r.cluster, r.consumer): r for r in consumers.itertuples(index=False)}
    for ax, key in zip(axes[:, 0], worst, strict=True):
        row = by_key.get(key)
        series = samples[(samples["cluster"] == key[0]) & (samples["consumer"] == key[1])] \
            .sort_values("t")
        series = _broken_at(series, _spans(row, "no_data_starts", "no_data_ends"))
        values = series["value"].astype("float64")
        top = max(float(values.max()) if values.notna().any() else 0.0,
                  float(row.objective_ms) if row is not None and pd.notna(row.objective_ms)
                  else 0.0, 1.0)
        scale, unit = _unit(top)
        ax.step(_dates(series["t"]), values / scale, where="post", color=_BLUE, lw=1.1)
        _bands(ax, _spans(row, "breach_starts", "breach_ends"),
               (options.end_ms - options.start_ms) / 1500, color=_RED, alpha=0.18, lw=0)
        _bands(ax, _spans(row, "no_data_starts", "no_data_ends"), facecolor=_GREY, alpha=0.45,
               lw=0, hatch="//")
        title = printable(f"{key[0]} / {key[1]}")
        if row is not None and pd.notna(row.objective_ms):
            ax.axhline(row.objective_ms / scale, color=_RED, ls="--", lw=1)
            attained = "-" if pd.isna(row.compliance) else f"{row.compliance * 100:.2f}%"
            title += (f"   objective ≤ {row.objective_ms / scale:g} {unit} for "
                      f"{row.target * 100:g}% of the time: {attained} within over the time "
                      f"with data ({row.no_data_share * 100:.1f}% without), {row.verdict}")
        ax.set_title(title, loc="left", fontsize=10, parse_math=False)
        ax.set_ylabel(f"freshness ({unit})", fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0, 0].set_xlim(lo, hi)
    _date_axis(axes[-1, 0])
    axes[-1, 0].set_xlabel("UTC", fontsize=9)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=_BLUE, lw=1.1, label="freshness (worst partition)"),
               Line2D([], [], color=_RED, ls="--", lw=1, label="objective"), *_legend()[1:]]
    axes[-1, 0].legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.28), ncol=4,
                       frameon=False, fontsize=8)
    return _png(fig)


def _legend() -> list[Any]:
    from matplotlib.patches import Patch

    return [Patch(color=_GREEN, label="within objective"),
            Patch(color=_RED, label="over objective", alpha=0.6),
            Patch(color=_GREY, label="no data")]


def breach_timeline(consumers: pd.DataFrame, options: Any, lanes: int = 30) -> bytes:
    if consumers.empty:
        return _empty("No consumers in the window.")
    judged = consumers[consumers["objective_ms"].notna()]
    rows = (judged if not judged.empty else consumers).head(lanes)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 0.34 * len(rows) + 1.2))
    start, end = options.start_ms, options.end_ms
    min_width = (end - start) / 600  # keep one-cycle breaches visible on a long window
    labels = []
    for lane, r in enumerate(rows.itertuples(index=False)):
        y = len(rows) - 1 - lane
        labels.append((y, printable(f"{r.cluster} / {r.consumer}")))
        ax.broken_barh([(_num(start), (end - start) / _DAY_MS)], (y - 0.35, 0.7), color=_GREEN)
        for starts, ends, color in ((r.no_data_starts, r.no_data_ends, _GREY),
                                    (r.breach_starts, r.breach_ends, _RED)):
            bars = [(_num(s), max(e - s, min_width) / _DAY_MS)
                    for s, e in zip(starts, ends, strict=True)]
            if bars:
                ax.broken_barh(bars, (y - 0.35, 0.7), color=color)
    ax.set_yticks([y for y, _ in labels], [label for _, label in labels], fontsize=8,
                  parse_math=False)
    ax.set_xlim(_num(start), _num(end))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    _date_axis(ax)
    ax.set_xlabel("UTC", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=_legend(), loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3,
              frameon=False, fontsize=8)
    return _png(fig)
