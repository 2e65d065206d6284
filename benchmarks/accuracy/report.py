"""Markdown tables, one PNG per shape, and the generated ``docs/accuracy.md``."""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.accuracy.analysis import METHODS, MethodScore, ShapeResult
from benchmarks.accuracy.harness import HarnessConfig, RunData
from benchmarks.accuracy.shapes import NOTES
from freshness_tracker.metrics import FRESHNESS

__all__ = ["fmt", "markdown_table", "own_error_table", "pages", "plot_shape", "table_head",
           "write_docs", "write_plots",
           "write_report"]

COLORS = {"truth": "#222222", "ours": "#1f77b4", "interpolation": "#ff7f0e", "rate": "#2ca02c"}
TABLE_METHODS = ("ours", "ours_cycle", "interpolation", "rate")


def fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    a = abs(x)
    text = f"{x:.2f}" if a < 10 else f"{x:.1f}" if a < 1000 else f"{x:,.0f}"
    return text + unit


def _undefined(pct_nan: float, pct_inf: float) -> str:
    parts = []
    if pct_inf:
        parts.append(f"{pct_inf:.0f}% ∞")
    if pct_nan:
        parts.append(f"{pct_nan:.0f}% NaN")
    return ", ".join(parts) or "0"


def table_head(*columns: str) -> list[str]:
    """A Markdown table's header line and its rule, one cell per column."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def _score_head(cfg: HarnessConfig, *extra: str) -> list[str]:
    """Header and rule of a table of method scores; ``extra`` columns go before the last."""
    return table_head("shape", "method", "mean \\|err\\| (s)", "max \\|err\\| (s)",
                      "err after onset (s)", "err after recovery (s)",
                      f"false alarms > {cfg.threshold_s:g} s (s)", "missed alarms (s)", *extra,
                      "no number (samples)")


def _score_row(shape: str, method: str, s: MethodScore, *extra: str) -> str:
    """One method's row under :func:`_score_head` (``extra``: its extra columns' cells)."""
    cells = [shape, method, fmt(s.mean_abs_s), fmt(s.max_abs_s), fmt(s.onset_s),
             fmt(s.recovery_s), f"{s.false_alarm_s:.0f}", f"{s.missed_s:.0f}", *extra,
             _undefined(s.nan_pct, s.inf_pct)]
    return "| " + " | ".join(cells) + " |"


def markdown_table(results: Sequence[ShapeResult], cfg: HarnessConfig) -> str:
    lines = _score_head(cfg)
    for res in results:
        for i, key in enumerate(TABLE_METHODS):
            shape = f"**{res.run.shape.name}**" if i == 0 else ""
            lines.append(_score_row(shape, METHODS[key], res.scores[key]))
    return "\n".join(lines)


def own_error_table(results: Sequence[ShapeResult], cfg: HarnessConfig) -> str:
    lines = ["| shape | cycle period P (s) | raw mean / max (s) | within one cycle mean / max (s) "
             "| Burrow delay needed to explain every value (s) "
             f"| samples beyond one cycle + {cfg.refresh_allowance_s:g} s | samples with a value |",
             "|" + "---|" * 7]
    for res in results:
        raw, cyc = res.scores["ours"], res.scores["ours_cycle"]
        lines.append(
            f"| {res.run.shape.name} | {res.cycle_window_s:.2f} | {fmt(raw.mean_abs_s)} / "
            f"{fmt(raw.max_abs_s)} | {fmt(cyc.mean_abs_s)} / {fmt(cyc.max_abs_s)} | "
            f"{fmt(res.refresh_needed_s)} | {len(res.excess_samples)} | "
            f"{res.coverage_pct:.0f}% |")
    return "\n".join(lines)


# ---- plots ---------------------------------------------------------------------------------------


def _label(name: str, values: Sequence[float], top: float, bottom: float,
           mean_err: float) -> str:  # fmt: skip
    extra = []
    finite = [v for v in values if math.isfinite(v)]
    over = [v for v in finite if v > top]
    n_inf = sum(math.isinf(v) for v in values)
    n_nan = sum(math.isnan(v) for v in values)
    if over:
        extra.append(f"off scale up to {fmt(max(over))} s")
    if n_inf:
        extra.append(f"+∞ in {100 * n_inf / len(values):.0f}% of samples")
    if any(v < bottom for v in finite):
        extra.append(f"down to {fmt(min(finite))} s")
    if n_nan:
        extra.append(f"NaN in {100 * n_nan / len(values):.0f}%")
    label = f"{name}: mean |err| {fmt(mean_err)} s"
    return label + (f" ({'; '.join(extra)})" if extra else "")


def plot_shape(res: ShapeResult, path: Path, cfg: HarnessConfig) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    truth_max = max((v for v in res.curve_s if math.isfinite(v)), default=0.0)
    ours_max = max((v for v in res.ours_s if math.isfinite(v)), default=0.0)
    top = max(truth_max * 1.3, ours_max * 1.15, 3.0)
    est_max = max((v for v in [*res.interp_s, *res.rate_s] if math.isfinite(v)), default=0.0)
    if est_max <= 4 * top:  # show the estimates whole unless they would squash the truth
        top = max(top, est_max * 1.1)
    bottom = -0.04 * top

    fig, ax = plt.subplots(figsize=(10, 4.6), dpi=110)
    ax.plot(res.curve_t_s, res.curve_s, color=COLORS["truth"], lw=2.6, alpha=0.35,
            label="ground truth (from the harness's log)", zorder=2)
    series = [
        ("ours", res.t_s, res.ours_s, "-", 1.6, "freshness-tracker"),
        ("interpolation", res.t_est_s, res.interp_s, "-", 1.2,
         "interpolation (kafka-lag-exporter)"),
        ("rate", res.t_est_s, res.rate_s, "--", 1.2, "offset lag ÷ produce rate"),
    ]
    for key, t, values, style, lw, name in series:
        clipped = [min(max(v, bottom), top) if not math.isnan(v) else math.nan for v in values]
        label = _label(name, values, top, bottom, res.scores[key].mean_abs_s)
        ax.plot(t, clipped, style, color=COLORS[key], lw=lw, label=label,
                zorder=4 if key == "ours" else 3)
        off = [(ti, top) for ti, v in zip(t, values, strict=True) if v > top]
        if off:
            ax.plot(*zip(*off, strict=True), "^", color=COLORS[key], ms=3.5, zorder=5,
                    clip_on=False)
        under = [(ti, bottom) for ti, v in zip(t, values, strict=True) if v < bottom]
        if under:
            ax.plot(*zip(*under, strict=True), "v", color=COLORS[key], ms=3.5, zorder=5,
                    clip_on=False)
    if cfg.threshold_s < top:
        ax.axhline(cfg.threshold_s, color="#d62728", ls=":", lw=1.1,
                   label=f"alert threshold ({cfg.threshold_s:g} s)", zorder=1)
    for label, _kind, at in res.events:
        ax.axvline(at, color="#888888", ls="--", lw=0.8, zorder=1)
        ax.text(at, top * 0.985, f" {label}", va="top", ha="left", fontsize=8, color="#555555")
    ax.set_xlim(0, res.curve_t_s[-1] if res.curve_t_s else 1)
    ax.set_ylim(bottom, top)
    recovery = next((at for _label, kind, at in res.events if kind == "recovery"), None)
    if recovery is not None:
        _zoom(ax, res, series, recovery)
    ax.set_xlabel("seconds since the start of the run")
    ax.set_ylabel("freshness / time lag (s)")
    ax.set_title(f"{res.run.shape.title}", fontsize=11, loc="left")
    ax.grid(True, alpha=0.25)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8,
              frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def _zoom(ax: Any, res: ShapeResult, series: list[Any], at: float, half: float = 8.0) -> None:
    """An inset around the recovery: how long each method keeps the old age."""
    lo_t, hi_t = at - half, at + half
    inset = ax.inset_axes((0.62, 0.27, 0.36, 0.47))
    picked = [v for t, v in zip(res.curve_t_s, res.curve_s, strict=True)
              if lo_t <= t <= hi_t and math.isfinite(v)]
    y_top = max(picked, default=1.0) * 1.25 or 1.0
    inset.plot(res.curve_t_s, res.curve_s, color=COLORS["truth"], lw=2.6, alpha=0.35)
    for key, t, values, style, lw, _name in series:
        shown = [min(max(v, -0.05 * y_top), y_top) if not math.isnan(v) else math.nan
                 for v in values]
        inset.plot(t, shown, style, color=COLORS[key], lw=lw, marker=".", ms=3)
    inset.axvline(at, color="#888888", ls="--", lw=0.8)
    inset.set_xlim(lo_t, hi_t)
    inset.set_ylim(-0.05 * y_top, y_top)
    inset.set_title(f"zoom: ±{half:g} s around the recovery (dots = samples)", fontsize=8)
    inset.tick_params(labelsize=7)
    inset.grid(True, alpha=0.25)


# ---- the report and the docs page ---------------------------------------------------------------


def write_report(run: RunData, results: Sequence[ShapeResult], out: Path) -> Path:
    """``out/report.md`` + ``out/<shape>.png``; returns the markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    for res in results:
        plot_shape(res, out / f"{res.run.shape.name}.png", run.config)
    path = out / "report.md"
    path.write_text(_page(run, results, out, out, title="Accuracy run"))
    return path


def write_docs(run: RunData, results: Sequence[ShapeResult], docs_path: Path,
               img_dir: Path) -> Path:  # fmt: skip
    for res in results:
        plot_shape(res, img_dir / f"accuracy-{res.run.shape.name}.png", run.config)
    docs_path.parent.mkdir(parents=True, exist_ok=True)
    docs_path.write_text(_page(run, results, docs_path.parent, img_dir, prefix="accuracy-"))
    return docs_path


def _page(run: RunData, results: Sequence[ShapeResult], page_dir: Path, img_dir: Path,
          title: str = "Accuracy: freshness against ground truth", prefix: str = "") -> str:
    cfg = run.config
    rel = Path(os.path.relpath(img_dir, page_dir))
    when = datetime.fromtimestamp(run.t0_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    max_excess = max((r.max_excess_s for r in results), default=0.0)
    verdict = ("never further from the ground truth than one cycle plus Burrow's refresh"
               if max_excess <= 0 else
               f"**beyond one cycle + refresh by up to {max_excess:.2f} s: investigate**")
    intro = _INTRO.format(interval=cfg.sample_interval_s, freshness=FRESHNESS.name)
    parts = [f"# {title}", "", intro, "",
             f"Generated by `python -m benchmarks.accuracy` ({cfg.mode} run, "
             f"{cfg.duration_s:.0f} s of traffic, {when}, {run.wall_s / 60:.1f} min wall time). "
             f"Thresholds and windows: alert threshold {cfg.threshold_s:g} s; exporter "
             f"`frequency_sec = {cfg.frequency_s:g}`; {sampling_text(cfg)}; "
             f"interpolation table {cfg.table_limit} points"
             + (f", one point per {cfg.table_poll_s:g} s" if cfg.table_poll_s else
                ", one point per sample")
             + f"; rate window {cfg.rate_window_s:g} s; \"after onset / recovery\" = mean "
             f"|error| over the {cfg.moment_window_s:g} s after the moment.", "",
             "## Results", "", markdown_table(results, cfg), "",
             *_summary(results, cfg), f"- Over every shape, our exporter was {verdict}.", "",
             _METHODS_TEXT.format(limit=cfg.table_limit, window=cfg.rate_window_s,
                                  threshold=cfg.threshold_s), "",
             "## Our own error", "", _OWN_ERROR_TEXT.format(
                 freq=cfg.frequency_s, refresh=cfg.refresh_allowance_s), "",
             own_error_table(results, cfg), "", "## Shapes", ""]
    for res in results:
        image = (rel / f"{prefix}{res.run.shape.name}.png").as_posix()
        parts += [f"### {res.run.shape.title} (`{res.run.shape.name}`)", "",
                  res.run.shape.description, "", f"![{res.run.shape.name}]({image})",
                  "", *_observations(res, cfg), ""]
        note = NOTES.get(res.run.shape.name)
        if note:
            parts += [note.replace("{lv}", f"{cfg.low_volume_interval_s:g}"), ""]
    parts += [_SETUP_TEXT.format(lv=cfg.low_volume_interval_s), ""]
    return "\n".join(parts)


def _summary(results: Sequence[ShapeResult], cfg: HarnessConfig) -> list[str]:
    """The worst case of each method, from this run's numbers."""
    lines = ["In short:", ""]
    for key in ("ours", "ours_cycle", "interpolation", "rate"):
        scored = [(r.scores[key], r.run.shape.name) for r in results]
        means = [(s.mean_abs_s, n) for s, n in scored if math.isfinite(s.mean_abs_s)]
        maxes = [(s.max_abs_s, n) for s, n in scored if math.isfinite(s.max_abs_s)]
        if not means:
            continue
        worst_mean, worst_max = max(means), max(maxes)
        false = sum(s.false_alarm_s for s, _ in scored)
        inf = [n for s, n in scored if s.inf_pct]
        nan = [n for s, n in scored if s.nan_pct]
        old = _one_cycle_old(results, worst_max[1]) if key == "ours" else ""
        if key == "ours_cycle" and worst_max[0] > 1.0:
            res = next(r for r in results if r.run.shape.name == worst_max[1])
            if res.refresh_needed_s <= cfg.refresh_allowance_s:
                old = (f": Burrow saw a commit only after a cycle had read it; a Burrow delay "
                       f"of {fmt(res.refresh_needed_s)} s explains every value of that shape")
        text = (f"- **{METHODS[key]}**: worst mean |error| {fmt(worst_mean[0])} s "
                f"({worst_mean[1]}), worst single error {fmt(worst_max[0])} s ({worst_max[1]}"
                f"{old}); {false:.0f} s of false alarms over all shapes")
        if inf:
            text += f"; +∞ on {', '.join(inf)}"
        if nan:
            text += f"; NaN on {', '.join(nan)}"
        lines.append(text + ".")
    return lines


def _one_cycle_old(results: Sequence[ShapeResult], shape: str) -> str:
    """Whether our worst raw error was a value one cycle old (the truth jumped meanwhile)."""
    res = next(r for r in results if r.run.shape.name == shape)
    errors = [abs(v - t) if math.isfinite(v) else -1.0
              for v, t in zip(res.ours_s, res.truth_s, strict=True)]
    worst = errors.index(max(errors))
    aligned = res.aligned_s[worst]
    if math.isfinite(aligned) and aligned < 1.0:
        return (f": a value one cycle old, within {fmt(aligned)} s of the truth of up to "
                f"{res.cycle_window_s:.1f} s earlier")
    return ""


def _observations(res: ShapeResult, cfg: HarnessConfig) -> list[str]:
    """Factual one-liners from the numbers of this run."""
    out = []
    truth_max = max((v for v in res.curve_s if math.isfinite(v)), default=0.0)
    out.append(f"- Ground truth peaks at {fmt(truth_max)} s.")
    for key in ("ours", "interpolation", "rate"):
        s = res.scores[key]
        bits = [f"mean |error| {fmt(s.mean_abs_s)} s, max {fmt(s.max_abs_s)} s"]
        if s.inf_pct:
            bits.append(f"+∞ in {s.inf_pct:.0f}% of samples (records waiting, none produced "
                        f"in the last {cfg.rate_window_s:g} s)")
        if s.nan_pct:
            bits.append(f"no number (NaN) in {s.nan_pct:.0f}% of samples")
        if s.false_alarm_s:
            bits.append(f"{s.false_alarm_s:.0f} s above {cfg.threshold_s:g} s while the truth "
                        "was below")
        if s.missed_s:
            bits.append(f"{s.missed_s:.0f} s at or below {cfg.threshold_s:g} s while the truth "
                        "was above")
        delay = s.alarm_delay_s
        if delay is not None:
            bits.append("never crossed the threshold" if math.isinf(delay) else
                        f"crossed the threshold {fmt(delay)} s after the truth did" if delay >= 0
                        else f"crossed the threshold {fmt(-delay)} s *before* the truth did")
        out.append(f"- {METHODS[key]}: " + "; ".join(bits) + ".")
    cyc = res.scores["ours_cycle"]
    out.append(f"- freshness-tracker within one cycle ({res.cycle_window_s:.1f} s): mean "
               f"{fmt(cyc.mean_abs_s)} s, max {fmt(cyc.max_abs_s)} s.")
    return out


_INTRO = """\
How far off is each way of turning Kafka offsets into time? This page puts freshness-tracker's
`{freshness}` beside the two estimates offsets-only exporters use, on real
traffic, against a ground truth known exactly. It is generated by the accuracy harness
([`benchmarks/accuracy/`](../benchmarks/accuracy/)): every number and plot below comes from one run.

The harness starts the real local stack (`devstack/`: Apache Kafka in KRaft mode, by default 3.9.1
read by Debian's Burrow 1.2.1 with `offset-refresh = 1`), a real `freshness-tracker run`
subprocess, and
plays six traffic shapes at once, each on its own topic with its own producer and its own
**real consumer group**: a confluent-kafka consumer (`assign()`, explicit synchronous commits)
whose processing speed the shape scripts. Its commits reach Burrow the way a real group's do,
through `__consumer_offsets`, stamped by the broker. Every {interval:g} s the harness
scrapes the exporter's `/metrics` and asks Burrow for the group's committed offset C and lag;
the two estimators run on exactly those samples, so all three methods see the same Burrow data.

**Ground truth** at time t: t − timestamp of the oldest record not yet committed, 0 when none.
The harness knows it exactly from its own log: the CreateTime it gave every record it produced
and the time every commit of its consumer returned."""

_METHODS_TEXT = """\
### The methods

- **freshness-tracker**: reads the record at the committed offset C and reports now − its
  timestamp (0 when Burrow's `current_lag` is 0). Measured, not estimated.
- **interpolation (kafka-lag-exporter)**: a faithful port of kafka-lag-exporter's `LookupTable`:
  per partition a sliding table of (LEO, poll time) points ({limit} points, a flat run kept as two
  points), LEO = Burrow's `end.offset + current_lag`. `lookup(C)` is 0 when C equals the newest
  point's offset, NaN with fewer than two points, else interpolates between the newest pair of
  points that brackets C, or extrapolates the line through the oldest and newest points; time lag
  = poll time − predicted time. Not clamped (it can go negative), as in the original.
- **offset lag ÷ produce rate**: (LEO − C) ÷ rate, the rate being the LEO increase over the last
  {window:g} s of samples (a `rate(...[1m])`-style rule, as Burrow-based dashboards build it); 0
  when the offset lag is 0, +∞ when records wait but none was produced in the window.

Columns: mean and max |error| over the samples where the method gave a number; the mean |error|
in the window after the shape's onset (burst, stall, outage) and after its recovery (drained,
caught up); seconds during which the method was above the {threshold:g} s threshold while the
truth was below it (false alarms) or not above it while the truth was (missed alarms); and the
share of samples with no number (NaN) or +∞. The row "within one cycle" forgives our
publication delay (next section)."""

_OWN_ERROR_TEXT = """\
freshness-tracker serves the values of its last completed cycle, so at a scrape its number is
the truth of a moment up to one cycle period P earlier (`frequency_sec` = {freq:g} s; cycles
start at a fixed rate) plus the cycle's own duration, and Burrow's view it measured from can be
older still: Burrow refreshes broker offsets every second (`offset-refresh = 1`), sees a commit
once its consumer has read it from `__consumer_offsets`, and answers `/lag` from an evaluation
it caches for `expire-cache = 1` s (together at most R = {refresh:g} s here). The raw error is
therefore large exactly when the truth jumps: at a recovery the truth falls to 0 at once while
the published value still shows the last cycle's age for up to P. Forgiving P ("within one
cycle": the smallest |value − truth(τ)| for τ in the last P seconds) leaves the effect of
Burrow's visibility delay: usually well under a second, but a commit that reaches Burrow just
after a cycle read it keeps the old value for one more cycle (at a recovery, the whole age of
the record just committed), and while a group catches up fast each second of delay is several
seconds of backlog. The check that must hold: every published value lies between truth(τ) and
truth(τ) + R for some moment τ of the last P + R seconds. The table gives the smallest R that
explains every value of a shape; above the allowance it would be a bug, and the harness says
so (and exits 1)."""

_SETUP_TEXT = """\
## Reproduce, and what the setup simplifies

```sh
python -m benchmarks.accuracy          # ~9 min: six shapes, 8 min of traffic; rewrites this page
python -m benchmarks.accuracy --quick  # ~2.5 min, 2 min of traffic; report in build/accuracy/
python -m benchmarks.accuracy --from build/accuracy/run.json  # re-score, re-plot a saved run
```

`--duration`, `--frequency`, `--threshold`, `--rate-window`, `--table-size`, `--table-poll` and
`--shapes` change the setup; `--help` lists everything. The raw run (the harness's log of every
produced timestamp and commit, and every sample) is saved as `run.json` beside the report.

- **Time is compressed.** "Low volume" is one record every {lv:g} s rather than every few
  minutes, and the interpolation table gets a point every second, where kafka-lag-exporter polls
  every 30 s by default and its gauge holds each value for the whole poll interval (its
  "0 to 30 s" sawtooth, kafka-lag-exporter #353; try `--table-poll 30`).
- **No NaN from the interpolation here**: kafka-lag-exporter exports NaN (#111) while a
  partition has fewer than two points, i.e. after the exporter starts or a partition appears;
  the harness's tables fill from the first samples, so these shapes do not show it.
- **The estimators are evaluated at the sampling instant**, with no publication delay of their
  own; ours is scraped as Prometheus would scrape it. That favours them by up to one cycle.
- One partition per topic, one consumer per group, a local broker: the per-partition arithmetic
  is the same for many partitions; how reads are batched across partitions is not measured here."""


# ---- the page from run records ------------------------------------------------------------

PAGE = "docs/accuracy.md"
COMPARISON_RECORDS = "docs/records/comparison"
ACCURACY_RECORDS = "docs/records/accuracy"
PAGE_METHODS = ("ours", "ours_rule", "ours_cycle", "interpolation", "rate")
PAGE_TITLES = {
    "ours": "freshness-tracker, gauge",
    "ours_rule": "freshness-tracker, rule (from Prometheus)",
    "ours_cycle": "freshness-tracker gauge, within one cycle",
    "interpolation": METHODS["interpolation"],
    "rate": METHODS["rate"],
}


def _runs(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(image prefix, record) for each run the page shows: the latest complete comparison run
    (the dev stack) first, then every accuracy record, failed ones included."""
    from benchmarks.accuracy.record import load_records

    out: list[tuple[str, dict[str, Any]]] = []
    compare = [r for r in load_records(root / COMPARISON_RECORDS, kind="accuracy")
               if r.get("status") == "complete"]
    if compare:
        out.append(("accuracy-", compare[-1]))
    for rec in load_records(root / ACCURACY_RECORDS, kind="accuracy"):
        kafka = str(rec.get("kafka", "unknown"))
        out.append((f"accuracy-kafka-{kafka}-", rec))
    return out


def _page_score(shape: Any, key: str) -> MethodScore | None:
    if key == "ours_rule":
        return shape.rule  # type: ignore[no-any-return]
    return shape.result.scores.get(key)  # type: ignore[no-any-return]


def sampling_text(cfg: HarnessConfig) -> str:
    """How the run sampled every tool: on a fixed grid, or at a random moment of each interval
    (so a tool that publishes on a fixed period is not read at one phase of it only)."""
    if cfg.sampling == "paired":
        return (f"every tool read once at a random moment of every {cfg.sample_interval_s:g} s "
                "of the clock (the mean over samples is the time average, whatever a tool's "
                "period); an interval in which a tool's scrape was still running is scored at "
                "its last answer, as a dashboard shows it")
    if cfg.sampling == "random":
        return (f"every tool read once at a random moment of every {cfg.sample_interval_s:g} s "
                "(the mean over samples is the time average, whatever a tool's period)")
    return f"samples every {cfg.sample_interval_s:g} s"


def page_table(shapes: Sequence[Any], cfg: HarnessConfig) -> str:
    from benchmarks.compare.report import alert_text

    lines = _score_head(cfg, "first alert vs truth (s)")
    for sh in shapes:
        first = True
        for key in PAGE_METHODS:
            s = _page_score(sh, key)
            if s is None:
                continue
            name = f"**{sh.result.run.shape.name}**" if first else ""
            first = False
            lines.append(_score_row(name, PAGE_TITLES[key], s, alert_text(s)))
    return "\n".join(lines)


def worst_sample(sh: Any) -> dict[str, float] | None:
    """Where the gauge's largest raw error happened, and what the truth did just before: the
    evidence for whether it is a value one cycle (plus Burrow's delay) old."""
    res: ShapeResult = sh.result
    errors = [abs(v - t) if math.isfinite(v) and math.isfinite(t) else -1.0
              for v, t in zip(res.ours_s, res.truth_s, strict=True)]
    if not errors or max(errors) < 0:
        return None
    i = errors.index(max(errors))
    at = res.t_s[i]
    before = [v for ct, v in zip(res.curve_t_s, res.curve_s, strict=True)
              if at - res.cycle_window_s - 10 <= ct <= at and math.isfinite(v)]
    drop = next((at - ct for ct, v in zip(reversed(res.curve_t_s), reversed(res.curve_s),
                                          strict=True)
                 if ct <= at and math.isfinite(v) and v > 0), math.nan)
    return {"t_s": at, "error_s": errors[i], "value_s": res.ours_s[i], "truth_s": res.truth_s[i],
            "truth_before_max_s": max(before, default=math.nan), "since_truth_fell_s": drop,
            "aligned_s": res.aligned_s[i] if i < len(res.aligned_s) else math.nan}


def worst_table(shapes: Sequence[Any], t0_ms: float, end_ms: float) -> str:
    from benchmarks.compare.page import _burrow_delays

    lines = ["| shape | gauge's max \\|err\\| (s) | at (s) | gauge / truth then (s) "
             "| truth's peak in the 10 s + one cycle before (s) | since the truth was last above 0 "
             "(s) | within one cycle (s) | commit → Burrow shows it, median / max (s) |",
             "|" + "---|" * 8]
    for sh in shapes:
        w = max((x for r in sh.replicas or [sh] if (x := worst_sample(r)) is not None),
                key=lambda x: x["error_s"], default=None)  # pooled: the worst phase's
        if w is None:
            continue
        delays = _burrow_delays(sh, t0_ms, end_ms)
        burrow = (f"{fmt(statistics.median(delays))} / {fmt(max(delays))}" if delays else "—")
        lines.append(
            f"| {sh.result.run.shape.name} | {fmt(w['error_s'])} | {w['t_s']:.0f} | "
            f"{fmt(w['value_s'])} / {fmt(w['truth_s'])} | {fmt(w['truth_before_max_s'])} | "
            f"{fmt(w['since_truth_fell_s'])} | {fmt(w['aligned_s'])} | {burrow} |")
    return "\n".join(lines)


def _run_section(prefix: str, rec: dict[str, Any]) -> list[str]:
    from benchmarks.compare.page import _load, _when, scored
    from benchmarks.compare.report import other_gauges_table, phases_text

    head = (f"## Apache Kafka {rec.get('kafka', '?')} + {rec.get('burrow', '?')} "
            f"(run of {_when(rec)})")
    what = [
        f"- Record: `{rec.get('_file', '')}`; command: `{rec.get('command', '')}`.",
        f"- Machine: {_load(rec.get('machine', {}))}.",
        f"- {rec.get('prometheus', 'no Prometheus')} scraped ours and evaluated the chart's "
        f"rules; the scored rule, as the run rendered it: "
        f"`{rec.get('rules', {}).get('expr', 'not recorded')}`.",
        *(f"- {key}: `{v}`." for key, v in rec.get("versions", {}).items()),
    ]
    if rec.get("status") != "complete" or "run" not in rec:
        return [head, "", *what, "",
                f"**This run {rec.get('status', 'failed')}**: "
                f"`{rec.get('error', 'no error recorded')}`. Nothing of it is scored.", ""]
    run, shapes = scored(rec)
    cfg = run.config
    parts = [head, "", *what, "",
             f"{cfg.duration_s:.0f} s of traffic, exporter `frequency_sec = "
             f"{cfg.frequency_s:g}`, {sampling_text(cfg)}, alert threshold "
             f"{cfg.threshold_s:g} s, interpolation table {cfg.table_limit} points, rate window "
             f"{cfg.rate_window_s:g} s, \"after onset / recovery\" = the {cfg.moment_window_s:g}"
             " s after the moment.", "",
             *([phases_text(cfg), ""] if cfg.replicas > 1 else []),
             page_table(shapes, cfg), "",
             "### Commit lag, data current as of, the catch-up estimate", "",
             other_gauges_table(shapes), "",
             "### Our own error", "", own_error_table([s.result for s in shapes], cfg), "",
             "### Where each shape's largest error comes from", "", _WORST_TEXT, "",
             worst_table(shapes, run.t0_ms, run.end_ms), "", "### Shapes", ""]
    for sh in shapes:
        name = sh.result.run.shape.name
        parts += [f"**{sh.result.run.shape.title}** (`{name}`): "
                  f"{sh.result.run.shape.description}", "",
                  f"![{name}](img/{prefix}{name}.png)", ""]
    return parts


def pages(root: Path) -> dict[str, str]:
    """``{"docs/accuracy.md": text}`` from the records under ``root/docs/records`` only."""
    runs = _runs(root)
    parts = ["# Accuracy: freshness against ground truth", "",
             _RECORD_INTRO.format(freshness=FRESHNESS.name), ""]
    if not runs:
        parts += ["No run is recorded yet.", ""]
    for prefix, rec in runs:
        parts += _run_section(prefix, rec)
    parts += [_METHODS_TEXT.format(limit=60, window=60, threshold=20).replace(
        "### The methods", "## The methods"), "", "## Our own error, explained", "",
        _OWN_ERROR_TEXT.format(freq=2, refresh=2), "", _RECORD_SETUP, ""]
    return {PAGE: "\n".join(parts)}


def write_plots(root: Path) -> list[Path]:
    """One plot per shape and recorded run (truth, ours' gauge and rule, the two ports)."""
    from benchmarks.compare.page import scored
    from benchmarks.compare.report import plot_shape as plot_compare

    written = []
    for prefix, rec in _runs(root):
        if rec.get("status") != "complete" or "run" not in rec:
            continue
        run, shapes = scored(rec)
        for sh in shapes:
            ours_only = dataclasses.replace(sh, peers={}, curves={})
            path = root / "docs" / "img" / f"{prefix}{sh.result.run.shape.name}.png"
            plot_compare(ours_only, path, run.config)
            written.append(path)
    return written


_RECORD_INTRO = """\
How far off is each way of turning Kafka offsets into time? This page puts freshness-tracker's
gauge (`{freshness}`) and its query-time rule
(`cluster_consumer:kafka_consumer_freshness_seconds:querytime_max`, evaluated by a real
Prometheus from the shipped rules: what a dashboard shows) beside the two estimates
offsets-only exporters use, on real traffic, against a ground truth known exactly. It is
rendered by `scripts/render_docs.py` from the run records in [`records/`](records/) (the plots
by `python -m benchmarks.compare --from docs/records/comparison`); the runs are made by
`python -m benchmarks.compare` with the accuracy harness
([`benchmarks/accuracy/`](../benchmarks/accuracy/)) on the real local stack (`devstack/`), six
traffic shapes at once, each on its own topic with its own **real consumer group** whose
commits reach Burrow through `__consumer_offsets`. A Burrow 1.9.5, where used, was built
locally from its source (never committed).

**Ground truth** at time t: t − timestamp of the oldest record not yet committed, 0 when none.
The harness knows it exactly from its own log: the CreateTime it gave every record it produced
and the time every commit of its consumer returned."""

_WORST_TEXT = """\
For each shape, the sample with the gauge's largest raw error: the value and the truth then,
the truth's peak just before, how long ago the truth was last above 0 (about 0 while it is
above 0; on low volume, how long ago the commit was), the error once
one cycle's publication delay is forgiven, and how long Burrow took to show each commit (the
harness asks Burrow every sample interval). A large raw error with a small "within one cycle"
error is a value one cycle plus Burrow's delay old while the truth fell at once: on low volume
the truth falls from a record's whole age to 0 at each commit, so any delay at all shows that
age as error until ours (or any tool) sees the commit. The bound is the record's age at its
commit, not something a faster exporter removes: only a faster view of the commit does."""

_RECORD_SETUP = """\
## Reproduce

```sh
python -m benchmarks.compare --skip-cost                # the dev stack, every peer beside ours
FT_BURROW_BIN=/path/to/Burrow python -m benchmarks.compare --tools ours --skip-cost \\
    --kafka-version 4.1.1 --record-dir docs/records/accuracy   # ours alone on Kafka 4
python -m benchmarks.compare --from docs/records/comparison    # re-render pages and plots
```

Time is compressed ("low volume" is one record every 45 s rather than every few minutes), the
estimators are evaluated at the sampling instant with no publication delay of their own (which
favours them by up to one cycle), and each shape is one partition with one consumer."""
