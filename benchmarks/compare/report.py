"""``docs/comparison.md`` and ``docs/img/compare-*.png`` from a saved comparison run."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy.analysis import MethodScore
from benchmarks.accuracy.harness import HarnessConfig, scatter_cycles
from benchmarks.accuracy.report import fmt, table_head
from benchmarks.compare.accuracy import CompareShape
from benchmarks.compare.stats import ratio, ratio_text, standard_error

__all__ = ["ACC_COLUMNS", "accuracy_table", "alert_text", "cost_table", "mean_abs_se",
           "mean_text", "offset_alert_gap_se", "onset_gap_se", "phases_text", "plot_shape"]

TITLES = {
    "ours": "freshness-tracker (gauge)",
    "ours_rule": "freshness-tracker (rule, from Prometheus)",
    "ours_stats": "freshness-tracker, librdkafka statistics on (as before)",
    "klag_message": 'klag-exporter "message"',
    "klag_rate": 'klag-exporter "rate"',
    "klag_message_30s": 'klag-exporter "message", 30 s (its default)',
    "klag_rate_30s": 'klag-exporter "rate", 30 s (its default)',
    "cft": "Consumer Freshness Tracker",
    "interpolation": "interpolation (kafka-lag-exporter's method, our port)",
    "rate": "offset lag ÷ produce rate (our port)",
    "kafka_exporter": "kafka_exporter (offsets only)",
    "kminion": "kminion (offsets only)",
    "burrow": "+ Burrow (ours' offsets source)",
}
COLORS = {
    "truth": "#222222",
    "ours": "#1f77b4",
    "ours_rule": "#17becf",
    "klag_message": "#d62728",
    "klag_rate": "#9467bd",
    "klag_message_30s": "#e377c2",
    "klag_rate_30s": "#8c564b",
    "cft": "#bcbd22",
    "interpolation": "#ff7f0e",
    "rate": "#2ca02c",
}
STYLES = {"ours": "-", "ours_rule": "-", "klag_message": "-.", "klag_rate": "--",
          "klag_message_30s": "-.", "klag_rate_30s": "--", "cft": "-",
          "interpolation": ":", "rate": ":"}
#: peers that export a time lag, in the order the tables list them
PEER_COLUMNS = ("klag_message", "klag_rate", "klag_message_30s", "klag_rate_30s", "cft")
ACC_COLUMNS = ("ours", "ours_rule", *PEER_COLUMNS, "interpolation", "rate")


def _title(key: str) -> str:
    return TITLES.get(key, key)


def _order(key: str) -> int:
    keys = list(TITLES)
    return keys.index(key) if key in keys else len(keys)


def _score(shape: CompareShape, key: str) -> MethodScore | None:
    if key in ("ours", "interpolation", "rate"):
        return shape.result.scores[key]
    if key == "ours_rule":
        return shape.rule
    return shape.peers.get(key)


def mean_abs_se(shape: CompareShape, key: str) -> float | None:
    """One standard error of a pooled shape's mean |error| of `key` across its phases: the
    spread of the phases' own means, so a gap between tools can be set against it. None for a
    shape of one phase (or with fewer than two phases' figures)."""
    return standard_error([s.mean_abs_s for r in shape.replicas
                           if (s := _score(r, key)) is not None])


def paired_gap_se(shape: CompareShape, key_a: str, key_b: str,
                  attr: str = "mean_abs_s") -> float | None:
    """One standard error of the gap between two tools' ``attr`` (mean |error|, error after
    onset, first-alert delay by its size) across phases, paired by phase (both measured the same
    events in each phase, so the events' own luck cancels). None for a shape of one phase."""
    def value(key: str) -> Callable[[CompareShape], float | None]:
        return lambda r: None if (s := _score(r, key)) is None else getattr(s, attr)

    return _paired_se(shape, value(key_a), value(key_b), attr == "alarm_delay_s")


def onset_gap_se(shape: CompareShape, key_a: str, key_b: str,
                 period_s: float) -> float | None:  # fmt: skip
    """One standard error of the gap between two tools' error after onset, over the periods
    of the clock (``period_s`` long) their samples in the onset windows fall in: per period,
    the mean |error| of ``key_a``'s samples (every copy's) minus ``key_b``'s. None without two
    such periods.

    Why not per copy, as :func:`paired_gap_se`: the copies' windows overlap in time, so they
    meet the same sampler reads and the same polls of each tool, and their gaps move together;
    a period of the clock holds draws of its own."""
    a, b = _score(shape, key_a), _score(shape, key_b)
    if a is None or b is None or not period_s > 0:
        return None

    def by_period(points: Sequence[tuple[float, float]]) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for t, error in points:
            out.setdefault(math.floor(t / period_s), []).append(error)
        return out

    per_a, per_b = by_period(a.onset_points), by_period(b.onset_points)
    return standard_error([sum(per_a[k]) / len(per_a[k]) - sum(per_b[k]) / len(per_b[k])
                           for k in sorted(per_a.keys() & per_b.keys())])


def offset_alert_gap_se(shape: CompareShape, ours_key: str, key: str) -> float | None:
    """:func:`paired_gap_se` of ours' first alert (``ours_key``) and peer ``key``'s
    offset-lag alert, by their sizes."""
    def ours(r: CompareShape) -> float | None:
        return None if (s := _score(r, ours_key)) is None else s.alarm_delay_s

    return _paired_se(shape, ours, lambda r: r.offset_alert_s.get(key), True)


def _paired_se(shape: CompareShape, value_a: Callable[[CompareShape], float | None],
               value_b: Callable[[CompareShape], float | None],
               by_size: bool) -> float | None:  # fmt: skip
    gaps = []
    for r in shape.replicas:
        va, vb = value_a(r), value_b(r)
        if va is None or vb is None or not (math.isfinite(va) and math.isfinite(vb)):
            continue
        gaps.append(abs(va) - abs(vb) if by_size else va - vb)
    return standard_error(gaps)


def mean_text(shape: CompareShape, key: str, score: MethodScore) -> str:
    """`score`'s mean |error|, with ± one standard error across phases where there are any."""
    se = mean_abs_se(shape, key)
    if se is None or not math.isfinite(score.mean_abs_s):
        return fmt(score.mean_abs_s)
    return f"{fmt(score.mean_abs_s)} ± {fmt(se)}"


def best_peer(shape: CompareShape, attr: str) -> tuple[str, float] | None:
    """The peer with the lowest finite ``attr`` (a peer silent on > 5 % of samples excluded;
    an alert delay is compared by its size: an alert before the truth's crossing is a false
    one, no better than as late)."""
    best: tuple[str, float] | None = None
    for key, s in shape.peers.items():
        v = getattr(s, attr)
        if v is None or not math.isfinite(v) or s.nan_pct + s.inf_pct > 5:
            continue
        if best is None or _size(attr, v) < _size(attr, best[1]):
            best = (key, v)
    return best


def _size(attr: str, v: float) -> float:
    return abs(v) if attr == "alarm_delay_s" else v


def headline_table(shapes: Sequence[CompareShape]) -> str:
    lines = table_head("shape", "ours, gauge", "ours, rule", "best peer",
                       "ours' first alert (gauge / rule)", "best peer's first alert")
    for sh in shapes:
        gauge, rule = sh.result.scores["ours"], sh.rule
        peer = best_peer(sh, "mean_abs_s")
        alert = best_peer(sh, "alarm_delay_s")
        offset_alerts = [(k, v) for k, v in sh.offset_alert_s.items()
                         if v is not None and math.isfinite(v)]
        if offset_alerts:
            k, v = min(offset_alerts, key=lambda kv: abs(kv[1]))
            if alert is None or abs(v) < abs(alert[1]):
                alert = (k, v)
        lines.append(
            f"| {sh.result.run.shape.name} | {mean_text(sh, 'ours', gauge)} | "
            f"{mean_text(sh, 'ours_rule', rule) if rule else 'not run'} | "
            + (f"{mean_text(sh, peer[0], sh.peers[peer[0]])} ({TITLES.get(peer[0], peer[0])})"
               if peer else "—")
            + f" | {_alert(gauge.alarm_delay_s)} / {_alert(rule.alarm_delay_s) if rule else '—'}"
            + " | "
            + (f"{_alert(alert[1])} ({TITLES.get(alert[0], alert[0])})" if alert else "—")
            + " |"
        )
    return "\n".join(lines)


def other_gauges_table(shapes: Sequence[CompareShape]) -> str:
    lines = table_head("shape", "commit lag mean / max \\|err\\| (s)",
                       "data current as of mean / max \\|err\\| (s)", "catch-up estimate")
    for sh in shapes:
        def pair(e: Any) -> str:
            if e is None or not e.scored:
                return "no value"
            return f"{fmt(e.mean_abs_s)} / {fmt(e.max_abs_s)} ({e.scored} samples)"

        cu = sh.catch_up
        catch = "—"
        if cu is not None:
            catch = (
                f"truth: caught up {fmt(cu.catch_up_s)} s after resuming from a "
                f"{fmt(cu.outage_s)} s outage; {cu.with_estimate} of {cu.samples} samples had "
                f"an estimate; predicted end − true end: mean \\|err\\| {fmt(cu.mean_abs_s)} s, "
                f"median {fmt(cu.median_s)} s, max \\|err\\| {fmt(cu.max_abs_s)} s"
                + (f"; first estimate {fmt(cu.first_after_s)} s after resuming, off by "
                   f"{fmt(cu.first_s)} s" if cu.first_s is not None else "")
            )
        lines.append(f"| {sh.result.run.shape.name} | {pair(sh.commit_lag)} | "
                     f"{pair(sh.data_as_of)} | {catch} |")
    return "\n".join(lines)


def _no_number(s: MethodScore) -> str:
    parts = []
    if s.inf_pct:
        parts.append(f"{s.inf_pct:.0f}% ∞")
    if s.nan_pct:
        parts.append(f"{s.nan_pct:.0f}% none")
    return ", ".join(parts) or "0"


def _alert(delay: float | None) -> str:
    if delay is None:
        return "—"
    if math.isinf(delay):
        return "never"
    return f"{delay:+.1f}"


def phases_text(cfg: HarnessConfig) -> str:
    """What a run of several replicas per shape did, and how its figures pool them ("" for a
    run of one)."""
    n = cfg.replicas
    if n <= 1:
        return ""
    return (
        f"Each shape ran {n} times at once ({n} phases), copy k on its own topic and group with "
        f"every time of the shape shifted by k × {cfg.frequency_s:g} s / {n}"
        + ("" if cfg.copy_spacing != "scattered" else
           f" plus c(k) × {cfg.frequency_s:g} s, c = {scatter_cycles(n)} (each copy at cycles "
           "and sampler reads of its own, so its first alert is a draw of its own)")
        + ", so every tool's "
        "polls meet the shape's commits at evenly spread phases and no ranking rests on where "
        "one run's polls fell. Figures pool the phases: mean |error| and the errors after "
        "onset and recovery over every phase's samples, max |error| the largest of any phase, "
        "false and missed alarms the mean seconds per phase, the first alert the mean over the "
        "phases (their range in brackets where they differ); plots show the unshifted phase."
    )


def alert_text(s: MethodScore) -> str:
    """The first alert; pooled replicas add the range of theirs when they differ."""
    span = s.alarm_delay_range_s
    if span is None or span[0] == span[1] or s.alarm_delay_s is None:
        return _alert(s.alarm_delay_s)
    return f"{_alert(s.alarm_delay_s)} ({_alert(span[0])} to {_alert(span[1])})"


def accuracy_table(shapes: Sequence[CompareShape], cfg: HarnessConfig) -> str:
    lines = table_head("shape", "tool", "mean \\|err\\| (s)", "max \\|err\\| (s)",
                       "err after onset (s)", "err after recovery (s)",
                       f"false alarms > {cfg.threshold_s:g} s (s)", "first alert vs truth (s)",
                       "no number (samples)")
    for shape in shapes:
        first = True
        for key in (*ACC_COLUMNS, *sorted(set(shape.peers) - set(ACC_COLUMNS))):
            s = _score(shape, key)
            if s is None:
                continue
            name = f"**{shape.result.run.shape.name}**" if first else ""
            first = False
            lines.append(
                f"| {name} | {TITLES.get(key, key)} | {fmt(s.mean_abs_s)} | {fmt(s.max_abs_s)} | "
                f"{fmt(s.onset_s)} | {fmt(s.recovery_s)} | {s.false_alarm_s:.0f} | "
                f"{alert_text(s)} | {_no_number(s)} |"
            )
        for key, delay in shape.offset_alert_s.items():
            if delay is not None:
                lines.append(
                    f"| | {TITLES.get(key, key)}: offset-lag alert | — | — | — | — | — | "
                    f"{_alert(delay)} | — |"
                )
    return "\n".join(lines)


def _cost_row(r: dict[str, Any], base: dict[str, Any]) -> list[str]:
    f, s = r["first"], r["steady"]
    bf, bs = base["first"], base["steady"]

    def cell(v: float | None, b: float | None, digits: str = ".2f", unit: str = "") -> str:
        if v is None:
            return "n/a"
        text = f"{v:{digits}}{unit}"
        return text if r is base else f"{text} ({ratio_text(ratio(v, b))})"

    first_req = sum(f["requests"].values())
    steady_req = sum(s["requests_per_round"].values())
    return [
        cell(f["round_s"], bf["round_s"]),
        cell(f["cpu_s"], bf["cpu_s"]),
        cell(first_req, sum(bf["requests"].values()), ",.0f"),
        cell(s["round_s"], bs["round_s"], ".3f"),
        cell(s["cpu_per_round_s"], bs["cpu_per_round_s"], ".3f"),
        cell(steady_req, sum(bs["requests_per_round"].values()), ",.1f"),
        cell(s["peak_rss_mib"], bs["peak_rss_mib"], ".0f"),
        cell(s["metrics_bytes"] / 1024, bs["metrics_bytes"] / 1024, ",.0f"),
    ]


def _apis(requests: dict[str, float]) -> str:
    return (
        ", ".join(
            f"{k} {v:,.1f}".replace(".0 ", " ").removesuffix(".0")
            for k, v in sorted(requests.items(), key=lambda kv: -kv[1])
        )
        or "none"
    )


def cost_table(cost: dict[str, Any], rep: int = 0) -> str:
    lines = []
    for sc in cost["scenarios"]:
        rows = [r for r in cost["results"] if r["scenario"] == sc["name"] and r["rep"] == rep]
        base = next((r for r in rows if r["tool"] == "ours" and "error" not in r), None)
        if base is None:
            continue
        lines += [
            f"**{sc['title']}** (repetition {rep + 1}; ratio to freshness-tracker in brackets)",
            "",
            "| tool | first round (s) | CPU to first round (s) | requests to first round "
            "| steady round (s) | CPU per steady round (s) | requests per steady round "
            "| peak RSS (MiB) | /metrics (KiB) |",
            "|" + "---|" * 9,
        ]
        for r in sorted(rows, key=lambda r: _order(r["tool"])):
            if "error" in r:
                lines.append(f"| {_title(r['tool'])} | failed: {r['error']} |" + " |" * 7)
                continue
            lines.append(f"| {_title(r['tool'])} | " + " | ".join(_cost_row(r, base)) + " |")
            if r["tool"] == "ours" and "burrow_cpu_per_round_s" in r["steady"]:
                s = r["steady"]
                lines.append(
                    f"| {TITLES['burrow']} | | | | | {s['burrow_cpu_per_round_s']:.3f} "
                    f"| not proxied | {s['burrow_peak_rss_mib']:.0f} | |"
                )
        lines += [
            "",
            "Requests by API (first round, from the tool's start / per steady round):",
            "",
        ]
        for r in sorted(rows, key=lambda r: _order(r["tool"])):
            if "error" in r:
                continue
            lines.append(
                f"- {_title(r['tool'])}: {_apis(r['first']['requests'])} / "
                f"{_apis(r['steady']['requests_per_round'])}"
            )
        lines += _unfinished_rounds(rows)
        lines.append("")
    return "\n".join(lines)


def _unfinished_rounds(rows: list[dict[str, Any]]) -> list[str]:
    """Peers whose log shows rounds abandoned at their collection timeout (klag: 10 s at a
    10 s poll): their per-round figures are per poll interval spent trying."""
    notes = []
    for r in rows:
        s = r.get("steady")
        if s is None or not s.get("timeouts_since_start"):
            continue
        notes.append(
            f"- {_title(r['tool'])}: {s['timeouts_since_start']} rounds abandoned at its "
            "collection timeout since its start (its log: \"Collection timed out\"), "
            f"finished rounds seen in the steady window: {s.get('distinct_round_stamps', 0)}; its "
            f"last `/metrics` had {s.get('series', 0):,} series against "
            f"{r['first'].get('series', 0):,} after its first round. Its per-round figures are "
            "per poll interval spent trying."
        )
    return ["", *notes] if notes else []


# ---- plots ---------------------------------------------------------------------------------


def plot_shape(shape: CompareShape, path: Path, cfg: HarnessConfig) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = shape.result
    series: list[tuple[str, list[float], list[float]]] = [
        ("ours", res.t_s, res.ours_s),
        *([("ours_rule", shape.rule_curve.t_s, shape.rule_curve.values)]
          if shape.rule_curve is not None else []),
        *[(k, c.t_s, c.values) for k, c in shape.curves.items()],
        ("interpolation", res.t_est_s, res.interp_s),
        ("rate", res.t_est_s, res.rate_s),
    ]
    truth_max = max((v for v in res.curve_s if math.isfinite(v)), default=0.0)
    top = max(truth_max * 1.6, 5.0)
    fig, ax = plt.subplots(figsize=(10, 4.6), dpi=110)
    ax.plot(
        res.curve_t_s,
        res.curve_s,
        color=COLORS["truth"],
        lw=3,
        alpha=0.3,
        label="ground truth",
        zorder=2,
    )
    for key, t, values in series:
        score = _score(shape, key)
        clipped = [
            min(v, top) if math.isfinite(v) else (top if v == math.inf else math.nan)
            for v in values
        ]
        label = TITLES.get(key, key) + (f": mean |err| {fmt(score.mean_abs_s)} s" if score else "")
        over = sum(1 for v in values if v > top)
        if over:
            label += f" ({over} samples off scale)"
        ax.plot(
            t,
            clipped,
            STYLES.get(key, "-"),
            color=COLORS.get(key, "#7f7f7f"),
            lw=1.3,
            label=label,
            zorder=4 if key == "ours" else 3,
        )
    if cfg.threshold_s < top:
        ax.axhline(
            cfg.threshold_s,
            color="#888888",
            ls=":",
            lw=1,
            label=f"alert threshold {cfg.threshold_s:g} s",
        )
    for label, _kind, at in res.events:
        ax.axvline(at, color="#aaaaaa", ls="--", lw=0.8)
        ax.text(at, top * 0.98, f" {label}", va="top", fontsize=8, color="#555555")
    ax.set_ylim(-0.03 * top, top)
    ax.set_xlim(0, res.curve_t_s[-1] if res.curve_t_s else 1)
    ax.set_xlabel("seconds since the start of the run")
    ax.set_ylabel("time lag / freshness (s)")
    ax.set_title(res.run.shape.title, fontsize=11, loc="left")
    ax.grid(True, alpha=0.25)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)

