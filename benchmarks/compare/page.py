"""``docs/comparison.md`` (and the README's short table) from the committed run records.

:func:`pages` is the renderer ``scripts/render_docs.py`` calls: it reads only the records under
``docs/records/comparison/`` and returns the page's text, so the page can be checked against
them anywhere. :func:`write_all` (``python -m benchmarks.compare``) also draws the plots.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy.analysis import (
    cycle_period_s,
    exact_offsets_error_s,
    gauge_alert_parts_s,
    measured_before_publication_s,
    onset_windows,
    pool_timing,
    read_age_s,
    timing_share,
    unseen_lag_after_onset_s,
    unseen_lag_in_run_s,
)
from benchmarks.accuracy.harness import HarnessConfig, RunData
from benchmarks.accuracy.record import load_records
from benchmarks.accuracy.report import fmt, sampling_text
from benchmarks.compare.accuracy import CompareShape, ours_scrape_interval_s, score_peers
from benchmarks.compare.report import (
    ACC_COLUMNS,
    TITLES,
    _score,
    accuracy_table,
    cost_table,
    headline_table,
    offset_alert_gap_se,
    onset_gap_se,
    other_gauges_table,
    paired_gap_se,
    phases_text,
    plot_shape,
)
from benchmarks.compare.stats import ratio, ratio_text

__all__ = ["PAGE", "RECORDS", "latest_scored", "pages", "render", "rule_over_nothing_waiting_s",
           "summary_scores", "truth_seen", "write_all"]

PAGE = "docs/comparison.md"
RECORDS = "docs/records/comparison"


def summary_scores(shapes: Sequence[CompareShape]) -> dict[str, Any]:
    """Per shape and method, the scores the page shows (kept in the record for audit)."""
    out: dict[str, Any] = {}
    for sh in shapes:
        entry: dict[str, Any] = {}
        for key in (*ACC_COLUMNS, *sh.peers):
            s = _score(sh, key)
            if s is not None:
                entry[key] = {k: (None if isinstance(v, float) and not math.isfinite(v)
                                  else round(v, 3) if isinstance(v, float) else v)
                              for k, v in s.__dict__.items()}
        entry["offset_alert_s"] = {k: None if v is None or not math.isfinite(v) else round(v, 3)
                                   for k, v in sh.offset_alert_s.items()}
        for name in ("commit_lag", "data_as_of", "catch_up"):
            value = getattr(sh, name)
            entry[name] = None if value is None else {
                k: (None if isinstance(v, float) and not math.isfinite(v)
                    else round(v, 3) if isinstance(v, float) else v)
                for k, v in value.to_json().items()}
        out[sh.result.run.shape.name] = entry
    return out


_SCORED: dict[str, tuple[RunData, list[CompareShape]]] = {}


def scored(record: dict[str, Any]) -> tuple[RunData, list[CompareShape]]:
    """A complete accuracy record's run, scored again from its samples (once per process for
    the same content: both pages show the dev stack's run)."""
    key = hashlib.sha256(json.dumps([record["run"], record.get("peers"), record.get("rule")],
                                    sort_keys=True).encode()).hexdigest()
    if key not in _SCORED:
        run = RunData.from_json(record["run"])
        _SCORED[key] = (run, score_peers(run, record.get("peers", {}), record.get("rule")))
    run, shapes = _SCORED[key]
    return run, list(shapes)


def latest_scored(
    records: Sequence[dict[str, Any]],
) -> tuple[dict[str, Any], RunData, list[CompareShape]] | None:
    complete = [r for r in records if r.get("status") == "complete" and "run" in r]
    if not complete:
        return None
    record = complete[-1]
    run, shapes = scored(record)
    return record, run, shapes


def pages(root: Path) -> dict[str, str]:
    """``{"docs/comparison.md": text}`` from ``root/docs/records/comparison`` only."""
    records = load_records(root / RECORDS)
    acc = [r for r in records if r.get("kind") == "accuracy"]
    costs = sorted((r for r in records if r.get("kind") == "cost"
                    and r.get("status", "complete") == "complete"),
                   key=lambda c: (_size(c), c.get("when", "")))
    measured = {(sc["partitions"], c.get("started", "")) for c in costs for sc in c["scenarios"]}
    failed_costs = [  # a failure a later run of the same size made good is history, not news
        r for r in records if r.get("kind") == "cost" and r.get("status") == "failed"
        and not any(size == r.get("partitions") and when > r.get("started", "")
                    for size, when in measured)
    ]
    latest = latest_scored(acc)
    failed_acc = [r for r in acc if r.get("status") != "complete"]
    page, _readme = render(latest[0] if latest else None, latest[2] if latest else None, costs,
                           failed_costs, failed_acc)
    return {PAGE: page}


def write_all(root: Path, plots: bool = True) -> list[Path]:
    """Both benchmark pages from the committed records, and (``plots``) their plots."""
    from benchmarks.accuracy import report as accuracy_report

    written = []
    for renderer in (pages, accuracy_report.pages):
        for rel, text in renderer(root).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    if plots:
        latest = latest_scored(load_records(root / RECORDS, kind="accuracy"))
        if latest is not None:
            _record, run, shapes = latest
            for shape in shapes:
                path = root / "docs" / "img" / f"compare-{shape.result.run.shape.name}.png"
                plot_shape(shape, path, run.config)
                written.append(path)
        written += accuracy_report.write_plots(root)
    return written


def render(
    record: dict[str, Any] | None,
    shapes: Sequence[CompareShape] | None,
    costs: Sequence[dict[str, Any]],
    failed: Sequence[dict[str, Any]] = (),
    failed_runs: Sequence[dict[str, Any]] = (),
) -> tuple[str, str]:
    """The page and the README's table. `record`: the latest complete accuracy record and
    `shapes` its scores; `costs`: cost records, smallest size first; `failed`: cost runs that
    did not complete; `failed_runs`: accuracy runs that did not."""
    parts = [
        "# Side by side: freshness-tracker and the tools users would pick instead",
        "",
        _INTRO,
        "",
        "## What ran",
        "",
        *_versions(record, costs),
        "",
    ]
    for bad in failed_runs:
        parts += [_failed_run(bad), ""]
    readme_rows: list[str] = []
    if record is not None and shapes is not None:
        run = RunData.from_json(record["run"])
        cfg = run.config
        parts += [
            "## Headline",
            "",
            _HEADLINE_TEXT.format(threshold=cfg.threshold_s),
            "",
            *([_SPREAD_TEXT.format(n=cfg.replicas)
               + (_SPREAD_ALERT_TEXT if cfg.copy_spacing == "scattered" else ""), ""]
              if cfg.replicas > 1 else []),
            headline_table(shapes),
            "",
            "## Accuracy",
            "",
            _ACC_TEXT.format(
                duration=cfg.duration_s,
                freq=cfg.frequency_s,
                threshold=cfg.threshold_s,
                window=cfg.moment_window_s,
                when=record.get("started", ""),
                wall=run.wall_s / 60,
                sampling=sampling_text(cfg),
                rule_grid=rule_grid_text(
                    (record.get("rule") or {}).get("grid_after_scrape_s"),
                    # the step is the interval Prometheus scraped ours at in a random run
                    ours_scrape_interval_s(cfg) if cfg.random_moments else None),
            ),
            "",
            *([phases_text(cfg), ""] if cfg.replicas > 1 else []),
            accuracy_table(shapes, cfg),
            "",
            *_thresholds(shapes),
            "",
            *truth_seen_table(shapes, run.t0_ms, run.end_ms),
            "",
            *_acc_summary(shapes),
            "",
            "### Ours beyond freshness",
            "",
            _OTHER_TEXT,
            "",
            other_gauges_table(shapes),
            "",
        ]
        for shape in shapes:
            name = shape.result.run.shape.name
            parts += [
                f"### {shape.result.run.shape.title} (`{name}`)",
                "",
                f"![{name}](img/compare-{name}.png)",
                "",
            ]
        readme_rows += _readme_accuracy(shapes)
    elif not failed_runs:
        parts += ["## Accuracy", "", "No accuracy run is recorded yet.", ""]
    parts += ["## Cost at equal work", ""]
    if costs or failed:
        parts += [_COST_TEXT, ""]
        for failure in failed:
            parts += [_failed_text(failure), ""]
        for cost in costs:
            parts += _cost_section(cost)
        for cost, earlier in _latest_per_size(costs):
            readme_rows += _readme_cost(cost, earlier)
    else:
        parts += ["No cost run is recorded yet (`python -m benchmarks.compare --skip-accuracy` "
                  "writes one).", ""]
    parts += [
        "## Where a peer beats us, and why",
        "",
        *_beats(shapes, costs, *_window(record), period_s=_period(record),
                onset_window_s=_config(record, "moment_window_s"),
                threshold_s=_config(record, "threshold_s"),
                independent_copies=_copies_independent(record)),
        "",
        _CANNOT,
        "",
        _REPRODUCE,
        "",
    ]
    readme = "\n".join(
        [
            '| | freshness-tracker | klag-exporter "message" | klag-exporter "rate" |',
            "|---|---|---|---|",
            *readme_rows,
        ]
    )
    return "\n".join(parts), readme


def _window(record: dict[str, Any] | None) -> tuple[float, float]:
    if record is None or "run" not in record:
        return 0.0, math.inf
    return float(record["run"]["t0_ms"]), float(record["run"]["end_ms"])


def _period(record: dict[str, Any] | None) -> float:
    """The run's `frequency_sec`: every tool's poll interval."""
    return _config(record, "frequency_s")


def _config(record: dict[str, Any] | None, key: str) -> float:
    """A number of the run's harness config (NaN without a run)."""
    if record is None or "run" not in record:
        return math.nan
    return float(record["run"]["config"][key])


def _copies_independent(record: dict[str, Any] | None) -> bool:
    """Whether the run's copies of a shape met polls and reads of their own."""
    return record is not None and "run" in record and \
        HarnessConfig.from_json(record["run"]["config"]).copy_spacing == "scattered"


def _when(record: dict[str, Any]) -> str:
    return str(record.get("started") or record.get("when", ""))[:16].replace("T", " ") + " UTC"


def _load(machine: dict[str, Any]) -> str:
    start, end = machine.get("load_start"), machine.get("load_end")
    text = f"{machine.get('cores', '?')} cores ({machine.get('cpu', 'unknown CPU')}), " \
           f"{machine.get('system', '')}"
    if start:
        text += f"; load average (1/5/15 min) {'/'.join(f'{v:g}' for v in start)} at the start"
    if end:
        text += f", {'/'.join(f'{v:g}' for v in end)} at the end"
    return text


def _failed_run(record: dict[str, Any]) -> str:
    return (f"**Accuracy run of {_when(record)} ({record.get('_file', '')}): "
            f"{record.get('status', 'failed')}**: `{record.get('error', 'no error recorded')}`; "
            "nothing of it is scored.")


def _ours_scrape_s(record: dict[str, Any]) -> float:
    """How often the run's Prometheus scraped ours."""
    return ours_scrape_interval_s(HarnessConfig.from_json(record.get("config", {})))


def _versions(record: dict[str, Any] | None, costs: Sequence[dict[str, Any]]) -> list[str]:
    lines = []
    if record is not None:
        lines += [
            f"- Accuracy run of {_when(record)} (record `{RECORDS}/{record.get('_file', '')}`):"
            f" `{record.get('command', '')}`.",
            f"- Machine: {_load(record.get('machine', {}))}. Shared with other jobs, so every "
            "figure is compared with ours measured in the same run.",
            f"- Stack: one-node Apache Kafka {record.get('kafka', '?')} (KRaft) + "
            f"{record.get('burrow', '?')} (`offset-refresh = 1`, `expire-cache = 1`); "
            f"{record.get('prometheus', 'no Prometheus')} scraping every peer at its poll "
            f"interval and ours every {_ours_scrape_s(record):g} s, and evaluating the chart's "
            "rules (as `examples/prometheus/freshness-tracker.rules.yml`, with "
            "`freshnessRateWindow` for the run's intervals) at the run's frequency.",
        ]
        rules = record.get("rules")
        if rules:
            lines.append(f"- The rule scored: `{rules.get('record')}` = `{rules.get('expr')}` "
                         f"(`{rules.get('file')}` at {rules.get('file_state')}).")
        for key, version in record.get("versions", {}).items():
            lines.append(f"- {TITLES.get(key, key)}: `{version}`.")
        if "cft" in record.get("versions", {}):
            lines.append("- The Consumer Freshness Tracker was compiled with `javac` against the "
                         "jars its repository pins, from Maven Central; one local change, binding "
                         "only: its metrics server listens on 127.0.0.1 (upstream binds every "
                         "interface and has no option for it). It reads Burrow like ours and "
                         "runs every `frequency_sec` after its previous run ended.")
        for key, why in record.get("skipped", {}).items():
            lines.append(f"- {TITLES.get(key, key)}: **not run**: {why}.")
    for cost in costs:
        lines.append(
            f"- Cost, {_sizes(cost)} (run of {_when(cost)}): {cost['nodes']}-node Apache Kafka "
            f"{cost['kafka_version']} (KRaft, RF {cost.get('replication_factor', cost['nodes'])},"
            f" frame proxies counting requests) + {cost['burrow']} Burrow."
        )
    lines += [
        "- Peers are built on this machine from their fetched sources (never committed, never "
        "a dependency of the package or of CI); each binds 127.0.0.1 only. A Burrow 1.9.5, "
        "where used, was built locally from its source.",
        "- kafka-lag-exporter (interpolation) and lag ÷ rate: our own ports "
        "(`benchmarks/accuracy/estimators.py`), run on the very Burrow samples ours used.",
    ]
    return lines


def truth_seen(sh: CompareShape, t0_ms: float, end_ms: float,
               step_ms: float = 23.0) -> dict[str, float]:  # fmt: skip
    """Per tool with a time lag (ours' gauge "ours", its rule "ours_rule", each peer): the mean
    truth at its sample moments ÷ the truth's time average over the run (every ``step_ms``, a
    step prime to the shapes' periods so the grid meets every phase of them), over every phase;
    empty for a shape whose truth averages 0. Below 1 a tool's samples met an easier truth than
    the run's, which flatters it."""
    at: dict[str, list[float]] = {}
    total, n = 0.0, 0
    for r in sh.replicas or [sh]:
        truth = r.result.run.truth
        for k in range(int((end_ms - t0_ms) / step_ms) + 1):
            if (v := truth.freshness_ms(t0_ms + k * step_ms)) is not None:
                total, n = total + v, n + 1
        times = {"ours": r.result.t_s, **{key: c.t_s for key, c in r.curves.items()},
                 **({"ours_rule": r.rule_curve.t_s} if r.rule_curve is not None else {})}
        for key, t_s in times.items():
            at.setdefault(key, []).extend(
                v for t in t_s if (v := truth.freshness_ms(t0_ms + t * 1000)) is not None)
    if not n or total <= 0:
        return {}
    average = total / n
    return {key: sum(seen) / len(seen) / average for key, seen in at.items() if seen}


def truth_seen_table(shapes: Sequence[CompareShape], t0_ms: float, end_ms: float) -> list[str]:
    """The :func:`truth_seen` ratios, a row per shape whose truth is not 0 all run."""
    rows = [(sh.result.run.shape.name, seen) for sh in shapes
            if (seen := truth_seen(sh, t0_ms, end_ms))]
    if not rows:
        return []
    keys = [k for k in (*ACC_COLUMNS, *_extra_peers(shapes)) if any(k in r for _, r in rows)]
    head = "| shape | " + " | ".join(TITLES.get(k, k) for k in keys) + " |"
    lines = [_TRUTH_SEEN_TEXT, "", head, "|---" * (len(keys) + 1) + "|"]
    for name, seen in rows:
        lines.append(f"| *{name}* | " + " | ".join(
            f"{seen[k]:.2f}" if k in seen else "—" for k in keys) + " |")
    return lines


_TRUTH_SEEN_TEXT = """\
Where each tool's samples fell: the mean truth at a tool's sample moments ÷ the truth's time
average over the run. Below 1, its samples met an easier truth than the run's and its mean
|error| is flattered, above 1 the reverse. The samplers are threads of the harness's process,
beside the traffic's consumers, so their reads and the consumers' waits need not be
independent (each reads one tool's /metrics at its moment; ours' then asks Burrow about every
group on another thread, so that work does not delay its next read); the rule is read from
Prometheus, another process."""


def _thresholds(shapes: Sequence[CompareShape]) -> list[str]:
    lines = []
    for sh in shapes:
        if sh.offset_threshold is not None and sh.offset_alert_s:
            records, basis = sh.offset_threshold
            lines.append(f"- {sh.result.run.shape.name}: offset-lag alert threshold "
                         f"{records:.1f} records ({basis}).")
    return (["Offsets-only tools' alert thresholds:", "", *lines]) if lines else []


def _sizes(cost: dict[str, Any]) -> str:
    return " and ".join(sc["title"] for sc in cost["scenarios"]) or "no scenario"


def _cost_section(cost: dict[str, Any]) -> list[str]:
    """One saved cost run: how it ran, then its tables (one per repetition and scenario)."""
    nodes = cost["nodes"]
    rf = cost.get("replication_factor", nodes)
    topics = cost.get("topic_counts", {})
    tools = "; ".join(dict.fromkeys(TITLES.get(r["tool"], r["tool"]) for r in cost["results"]))
    parts = [
        f"### {_sizes(cost)} (run of {cost.get('when', '')[:16].replace('T', ' ')} UTC)",
        "",
        f"Tools: {tools}.",
        "",
        f"Run {cost.get('when', '')}: workloads built in {cost['build_s'] / 60:.1f} min, "
        f"whole run {cost['wall_s'] / 60:.1f} min; every tool polls every {cost['poll_s']:g} "
        f"s, {cost['rounds']} steady rounds, {cost['reps']} repetition"
        f"{'s' if cost['reps'] > 1 else ''}"
        + (" (order alternating)" if cost["reps"] > 1 else "")
        + "; "
        + (
            ", ".join(f"{n:,} topics ({name})" for name, n in topics.items()) + " of up to 100 "
            "partitions; "
            if topics
            else ""
        )
        + f"requests through the proxies while no tool ran (3 s): "
        f"{cost['idle_requests_3s'] or 'none'}.",
        "",
    ]
    if cost.get("replication_capped"):
        parts += [
            f"Replication factor {rf}, capped by the run's `--max-replication`: at a higher "
            "factor the brokers of this machine could not take the workload's records in time "
            "(a failed run's record says so). What the tools ask for does not change (they "
            "talk to partition leaders only), the brokers' own replication work does.",
            "",
        ]
    elif rf < nodes:
        parts += [
            f"Replication factor {rf}, not {nodes}: a broker keeps every partition replica's "
            "active log segment open, and this machine's hard limit of "
            f"{cost.get('open_files_limit', 0):,} open files per process (`ulimit -Hn`, "
            "not raisable here) is below one file per partition of the cluster "
            f"({sum(sc['partitions'] for sc in cost['scenarios']):,} partitions). With RF "
            f"{rf} each broker holds about "
            f"{sum(sc['partitions'] for sc in cost['scenarios']) * rf // nodes:,} replicas and "
            "leads as many partitions as at RF 3; what the tools ask for does not change "
            "(they talk to partition leaders only), the brokers' own replication work does.",
            "",
        ]
    parts += [*(f"- {note}" for note in cost.get("notes", [])), ""] if cost.get("notes") else []
    for name, error in cost.get("build_errors", {}).items():
        parts += [f"The {name} scenario could not be built: `{error}`.", ""]
    for rep in range(cost["reps"]):
        parts += [cost_table(cost, rep), ""]
    parts += _burrow_alone(cost)
    return parts


def _burrow_alone(cost: dict[str, Any]) -> list[str]:
    """Burrow's own CPU with no tool running, at the accuracy stack's refresh and at its
    defaults: what ours' offsets cost a site that runs Burrow only for it."""
    phases = cost.get("burrow_phases") or []
    if not phases:
        return []

    def setting(phase: dict[str, Any]) -> str:
        refresh = phase["refresh"]
        return ", ".join(f"`{key} = {value:g}`" for key, value in refresh.items())

    rows = [
        f"- {setting(p)}: {p['cpu_per_s']:.4f} CPU s per s ({p['cpu_per_poll_s']:.3f} per "
        f"{cost['poll_s']:g}-s poll interval) over {p['window_s']:.0f} s, peak RSS "
        f"{p['peak_rss_mib']:.0f} MiB" + (" (restarted with this setting)" if p["restarted"]
                                          else "")
        for p in phases
    ]
    ratio = ""
    if len(phases) >= 2 and phases[-1]["cpu_per_s"] > 0:
        times = phases[0]["cpu_per_s"] / phases[-1]["cpu_per_s"]
        ratio = f" the first setting costs {times:.1f}× the CPU of the last."
    return [
        "**Burrow alone**, no tool running, same cluster and groups after the tools' runs:"
        + ratio,
        "",
        *rows,
        "",
    ]


def _failed_text(failed: dict[str, Any]) -> str:
    return (
        f"**{failed['partitions']:,} lagging partitions: attempted, not measured** "
        f"({failed['when']}): the run failed with `{failed['error']}`."
    )


def _home(path: Path | None) -> str:
    """A path with the home directory as ``~`` (the page names no user's home)."""
    if path is None:
        return "none"
    try:
        return "`~/" + path.relative_to(Path.home()).as_posix() + "`"
    except ValueError:
        return f"`{path}`"


def _acc_summary(shapes: Sequence[CompareShape]) -> list[str]:
    lines = ["In short (this run):", ""]
    for key in (*ACC_COLUMNS, *_extra_peers(shapes)):
        scored = [(s, sh.result.run.shape.name) for sh in shapes if (s := _score(sh, key))]
        if not scored:
            continue
        means = [(s.mean_abs_s, n) for s, n in scored if math.isfinite(s.mean_abs_s)]
        false = sum(s.false_alarm_s for s, _ in scored)
        stuck = next((s.alarm_delay_s for s, n in scored if n == "stuck"), None)
        none = [n for s, n in scored if s.nan_pct or s.inf_pct]
        text = f"- **{TITLES.get(key, key)}**: "
        if means:
            worst = max(means)
            text += f"worst mean |error| {fmt(worst[0])} s ({worst[1]}); "
        text += f"{false:.0f} s of false alarms over all shapes"
        if stuck is not None:
            text += (
                "; never alerted on the stuck consumer"
                if math.isinf(stuck)
                else f"; alerted on the stuck consumer {fmt(stuck)} s after the truth crossed "
                "the threshold"
            )
        if none:
            text += f"; no number at times on {', '.join(none)}"
        lines.append(text + ".")
    return lines


def _extra_peers(shapes: Sequence[CompareShape]) -> list[str]:
    """Peers scored in the run that the fixed column order does not name."""
    return sorted({k for sh in shapes for k in sh.peers} - set(ACC_COLUMNS))


def _readme_accuracy(shapes: Sequence[CompareShape]) -> list[str]:
    rows = []
    keys = ("ours", "klag_message", "klag_rate")

    def worst(key: str) -> str:
        vals = [
            (s.mean_abs_s, sh.result.run.shape.name)
            for sh in shapes
            if (s := _score(sh, key)) and math.isfinite(s.mean_abs_s)
        ]
        if not vals:
            return "not run"
        v, n = max(vals)
        return f"{fmt(v)} s ({n})"

    def false(key: str) -> str:
        vals = [s.false_alarm_s for sh in shapes if (s := _score(sh, key))]
        return f"{sum(vals):.0f} s" if vals else "not run"

    def stuck(key: str) -> str:
        for sh in shapes:
            s = _score(sh, key)
            if s and sh.result.run.shape.name == "stuck" and s.alarm_delay_s is not None:
                return "never" if math.isinf(s.alarm_delay_s) else f"{s.alarm_delay_s:+.1f} s"
        return "—"

    rows.append(
        "| worst mean \\|error\\| over the six shapes | "
        + " | ".join(worst(k) for k in keys)
        + " |"
    )
    rows.append(
        "| false alarms (above 20 s while the truth was below) | "
        + " | ".join(false(k) for k in keys)
        + " |"
    )
    rows.append(
        "| alert on the stuck consumer, vs the truth | " + " | ".join(stuck(k) for k in keys) + " |"
    )
    return rows


def _cost_median(
    cost: dict[str, Any], scenario: str, tool: str, path: tuple[str, str]
) -> float | None:
    vals = []
    for r in cost["results"]:
        if r["scenario"] == scenario and r["tool"] == tool and "error" not in r:
            v = r[path[0]].get(path[1])  # burrow_*: only when Burrow's process was seen
            vals.append(sum(v.values()) if isinstance(v, dict) else v)
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _gave_up(cost: dict[str, Any], scenario: str, tool: str) -> bool:
    """Whether the tool abandoned rounds at its collection timeout in this scenario."""
    return any(
        r["scenario"] == scenario and r["tool"] == tool and r["steady"].get("timeouts_since_start")
        for r in cost["results"]
        if "steady" in r
    )


def _no_figure(
    cost: dict[str, Any], scenario: str, tool: str, earlier: Sequence[dict[str, Any]] = ()
) -> str:
    """Why a tool has no figure: it ran and never finished a round (here or in an earlier run
    of the same size), or it did not run."""
    if any(r["scenario"] == scenario and r["tool"] == tool for r in cost["results"]):
        return "no complete round"
    for run in earlier:
        if any(r["scenario"] == scenario and r["tool"] == tool for r in run["results"]):
            return f"no complete round (run of {run.get('when', '')[:16].replace('T', ' ')})"
    return "not run"


def _size(cost: dict[str, Any]) -> int:
    return max((sc["partitions"] for sc in cost["scenarios"]), default=0)


def _latest_per_size(
    costs: Sequence[dict[str, Any]],
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Per size, the latest run (the README's ratios, all from that one run) and the earlier
    runs of that size (only to say that a tool the latest run left out never finished there)."""
    by_size: dict[int, list[dict[str, Any]]] = {}
    for cost in costs:
        by_size.setdefault(_size(cost), []).append(cost)
    out = []
    for size in sorted(by_size):
        runs = sorted(by_size[size], key=lambda c: c.get("when", ""))
        out.append((runs[-1], runs[:-1]))
    return out


def _readme_cost(cost: dict[str, Any], earlier: Sequence[dict[str, Any]] = ()) -> list[str]:
    rows = []
    sc = cost["scenarios"][0]
    keys = ("ours", "klag_message", "klag_rate")
    for label, path in (
        ("CPU per steady round", ("steady", "cpu_per_round_s")),
        ("peak RSS", ("steady", "peak_rss_mib")),
        ("Kafka requests, first round", ("first", "requests")),
    ):
        base = _cost_median(cost, sc["name"], "ours", path)
        cells = []
        for k in keys:
            v = _cost_median(cost, sc["name"], k, path)
            cells.append(
                _no_figure(cost, sc["name"], k, earlier)
                if v is None
                else "1×"
                if k == "ours"
                else ratio_text(ratio(v, base))
            )
        rows.append(
            f"| {label}, {sc['partitions']:,} lagging partitions (ratio to ours) | "
            + " | ".join(cells)
            + " |"
        )
    ours = _cost_median(cost, sc["name"], "ours", ("steady", "cpu_per_round_s"))
    burrow = _cost_median(cost, sc["name"], "ours", ("steady", "burrow_cpu_per_round_s"))
    if ours is not None and burrow is not None:
        cells = ["1×"]
        for k in keys[1:]:
            v = _cost_median(cost, sc["name"], k, ("steady", "cpu_per_round_s"))
            whole = ratio(v, ours + burrow)
            cells.append(
                _no_figure(cost, sc["name"], k, earlier) if v is None else ratio_text(whole)
            )
        rows.insert(
            1,
            f"| CPU per steady round, {sc['partitions']:,} lagging partitions, counting the Burrow "
            "ours reads (`offset-refresh = 1`) (ratio to ours + Burrow) | "
            + " | ".join(cells)
            + " |",
        )
    return rows


_METRIC_FIX = {
    ("steady", "cpu_per_round_s"): "A steady round of ours, with nothing moving, still asks "
    "Burrow for every group's lag over HTTP and builds and renders every partition's series in "
    "Python; klag's rate mode does arithmetic in Rust on a handful of Kafka answers. "
    "librdkafka's statistics, which keep a timer and an entry per partition of every topic a "
    "pool consumer has read, are off unless a cluster's `kafka` properties set them (the "
    "`ours_stats` tool measures them on). What is left: skipping the per-partition work "
    "for groups whose Burrow answer has not changed since "
    "the last cycle would close most of it (not done here)",
    ("steady", "peak_rss_mib"): "Ours is a CPython process (interpreter, confluent-kafka, "
    "prometheus_client) holding the last snapshot and its rendered exposition; a Rust binary "
    "without a consumer pool starts far lower. Per-partition memory is the scale issue's (\"A "
    "hundred thousand partitions\"); the interpreter's floor is not within reach",
    ("first", "round_s"): "Ours' first cycle asks Burrow for every group's lag, then reads two "
    "records per partition (C for freshness, C − 1 for the commit lag; caught-up partitions' "
    "C − 1 too, `lookup.commitLagWhenCaughtUp`, on by default); klag's message mode reads one "
    "record per lagging partition and its rate mode none. Setting "
    "`lookup.commitLagWhenCaughtUp = false` removes the caught-up reads, at the price of the "
    "commit lag and data-current-as-of of caught-up groups. On a shared machine round "
    "durations under a second vary between repetitions (each run's load is listed under its "
    "table): compare repetitions before reading much into these",
    ("steady", "round_s"): "Ours' steady cycle is Burrow's REST answers (one `/lag` request per "
    "group) plus building the snapshot; its duration is mostly Burrow's and Python's, not Kafka's",
    ("steady", "metrics_bytes"): "",
    ("first", "requests"): "Ours' first round reads the records it measures: two per lagging "
    "partition, batched per leader into a few Fetch requests per broker (the table's "
    "requests by API); klag's rate mode reads no record at all, it divides offset lag by a "
    "rate (the "
    "accuracy part shows what that costs). Not to be closed without estimating instead of "
    "measuring",
}


#: The smallest gap listed under "Where a peer beats us": the figures' own resolution (a
#: hundredth of a second); each listed gap says whether it is within the phases' spread.
BEATS_FROM_S = 0.01


_ACCURACY_FIX = (
    "Ours' gauge is the value of its last cycle, measured when Burrow answered for the group, "
    "or, for a partition still waiting where the previous cycle saw it, when the cycle's reads "
    "were in ({measured_before} s before the cycle published it in this run, the mean over the "
    "stuck groups; the Consumer Freshness Tracker ages every partition to the moment of its "
    "Kafka read); like every "
    "peer's number it changes only at a poll (ours' cycles started every {ours_period} s in "
    "this run, the median; the Consumer Freshness Tracker pauses `frequency_sec` after each run "
    "ends, so its period is that plus its run). "
    "While the truth grows (a stuck consumer) the gauge is behind by the time since its cycle; "
    "the rule removes that between scrapes (it ages the record's timestamp with Prometheus' "
    "clock). Where the truth falls at a commit (a group catching up, a record committed) every "
    "tool shows the old age until its first poll after the commit, and the rule, carrying the "
    "gauge forward at its rate, a little more: one sample at the old age weighs that age ÷ the "
    "number of samples in the mean. Which tool polls first after those few moments is the "
    "phase of its polls, and one run measures one phase (the same one at each event when the "
    "events' spacing is close to a multiple of the tool's period). The figures below separate "
    "this from Burrow. Per shape: ours' gauge over the samples whose cycle is known; the same "
    "cycles given the exact committed offsets of the harness's log (the difference is Burrow's "
    "share: commits and log end offsets it had not shown at the cycle, as its log end offsets "
    "are refreshed every `offset-refresh` and its `/lag` answer is the evaluation its cache "
    "kept from any client's request up to `expire-cache = 1` s before; a few hundredths "
    "below 0 where the cycle measured a little after it started); and a tool that polls "
    "the exact offsets every {period:g} s and publishes at once, averaged over the phase of its "
    "polls, with the range its phase alone spans"
)


def _burrow_delays(sh: CompareShape, t0_ms: float, end_ms: float) -> list[float]:
    """Seconds from each commit that moved the offset to the first Burrow answer showing it
    (the harness polls Burrow every sample interval, so to within one interval)."""
    if sh.replicas:
        return [d for r in sh.replicas for d in _burrow_delays(r, t0_ms, end_ms)]
    r = sh.result.run
    samples = [s for s in r.samples if s.committed is not None]
    delays, last = [], None
    for at_ms, offset in r.truth.commits:
        if offset == last or not t0_ms <= at_ms <= end_ms:
            last = offset
            continue
        last = offset
        seen = next((s.burrow_ms for s in samples
                     if s.burrow_ms >= at_ms and int(s.committed or 0) >= offset), None)
        if seen is not None:
            delays.append((seen - at_ms) / 1000)
    return delays


def rule_over_nothing_waiting_s(sh: CompareShape, t0_ms: float) -> float | None:
    """The part of the rule's mean |error| from read-outs above 0 while no record waited (the
    truth 0), over every phase; None without rule read-outs. Such a read-out is a wait a cycle
    saw that the group ended before the read-out: until the next cycle shows the commit the
    rule holds it, as the gauge does (and carries it with the clock if it was a cycle long)."""
    n, over = 0, 0.0
    for r in sh.replicas or [sh]:
        if r.rule_curve is None:
            continue
        for t_s, value in zip(r.rule_curve.t_s, r.rule_curve.values, strict=True):
            truth = r.result.run.truth.freshness_ms(t0_ms + t_s * 1000)
            if truth is None or math.isnan(value):
                continue
            n += 1
            if truth == 0 and value > 0:
                over += value
    return over / n if n else None


def _timing(shapes: Sequence[CompareShape], t0_ms: float, end_ms: float,
            period_s: float, window_s: float, threshold_s: float = math.nan
            ) -> str:  # fmt: skip
    """Per shape, the gauge's error split into its cycles' timing and Burrow's share."""
    parts = []
    for sh in shapes:
        share = pool_timing([timing_share(r.result.run, t0_ms, end_ms, period_s)
                             for r in sh.replicas or [sh]])
        if share is None:
            continue
        burrow = round(share.gauge_s - share.exact_at_cycles_s, 2)
        runs = [r.result.run for r in sh.replicas or [sh]]
        onset = unseen_lag_after_onset_s(runs, t0_ms, window_s)
        windows = onset_windows(t0_ms, window_s)
        exact_onset = exact_offsets_error_s(runs, windows, period_s)
        whole = unseen_lag_in_run_s(runs, t0_ms, end_ms)
        ages = (read_age_s(runs, windows), read_age_s(runs, lambda _r: [(t0_ms, end_ms)]))
        rule_over = rule_over_nothing_waiting_s(sh, t0_ms)
        alert = (gauge_alert_parts_s(runs, t0_ms, threshold_s)
                 if math.isfinite(threshold_s) else None)
        parts.append(
            f"{sh.result.run.shape.name}: gauge {fmt(share.gauge_s)} s, its cycles with exact "
            f"offsets {fmt(share.exact_at_cycles_s)} s (Burrow's share "
            f"{f'{burrow:+.2f}' if burrow else '0.00'} s), exact offsets every "
            f"{period_s:g} s {fmt(share.phase_mean_s)} s ({fmt(share.phase_min_s)} to "
            f"{fmt(share.phase_max_s)} s by phase)"
            + ("" if not whole or round(whole[1], 2) == 0 else
               f"; {fmt(whole[1])} s of the gauge's mean are samples at 0 while a record "
               "waited (Burrow not showing the partition lagging at the cycle)")
            + ("" if onset is None else
               f"; after onset the gauge's {fmt(onset[0])} s include {fmt(onset[1])} s of "
               "samples at 0 while the truth was not (Burrow not yet showing the partition "
               "lagging)"
               + ("" if exact_onset is None else
                  f", its cycles with exact offsets {fmt(exact_onset)} s")
               + ("" if ages[0] is None or ages[1] is None else
                  f", and the harness's reads of ours in those windows came {fmt(ages[0])} s "
                  f"after its cycle published, on average ({fmt(ages[1])} s over the run; "
                  f"{fmt(period_s / 2)} s, half a cycle, at random moments)"))
            + ("" if alert is None else
               f"; the gauge's first alert above {threshold_s:g} s: its cycle published "
               f"{fmt(alert[0])} s after the truth crossed it (the phase of its cycles), read "
               f"{fmt(alert[1])} s after that (the harness's read moment), the means over the "
               "phases")
            + ("" if rule_over is None or round(rule_over, 2) == 0 or sh.rule is None else
               f"; {fmt(rule_over)} s of the rule's {fmt(sh.rule.mean_abs_s)} s are read-outs "
               "above 0 while no record waited (a wait a cycle saw, which the group ended "
               "before the read-out: every tool shows it until its next poll, the rule a "
               "little more where it carries a wait of a cycle or longer with the clock)")
        )
    return "; ".join(parts)


def _beats(
    shapes: Sequence[CompareShape] | None, costs: Sequence[dict[str, Any]],
    t0_ms: float = 0.0, end_ms: float = math.inf, period_s: float = math.nan,
    onset_window_s: float = math.nan, threshold_s: float = math.nan,
    independent_copies: bool = True,
) -> list[str]:
    """Every case of this run where a peer did better than ours (gauge or rule) on mean
    |error|, error after onset or first-alert delay, by how much; then the cost cases.
    ``independent_copies``: the copies of a shape met polls and reads of their own (scattered
    over cycles), so a first alert's gap has a standard error."""
    found: dict[str, list[str]] = {}
    fixes: dict[str, str] = {}
    for sh in shapes or []:
        name = sh.result.run.shape.name
        for ours_key in ("ours", "ours_rule"):
            ours = _score(sh, ours_key)
            if ours is None:
                continue
            for key, s in sh.peers.items():
                if s.nan_pct + s.inf_pct > 5:
                    continue  # a mean over the samples where it said nothing is no win
                for label, attr in (("mean |error|", "mean_abs_s"),
                                    ("error after onset", "onset_s"),
                                    ("first alert", "alarm_delay_s")):
                    mine, theirs = getattr(ours, attr), getattr(s, attr)
                    if mine is None or theirs is None or not math.isfinite(theirs):
                        continue
                    if label == "first alert":  # an early alert is a false one: by its size
                        mine, theirs = abs(mine), abs(theirs)
                    if not math.isfinite(mine) or theirs < mine - BEATS_FROM_S:
                        exact = (_exact_offsets_s(sh, attr, t0_ms, end_ms, period_s,
                                                  onset_window_s)
                                 if ours_key == "ours" else None)
                        found.setdefault("accuracy", []).append(
                            f"{name}, {label}: {TITLES.get(key, key)} {fmt(theirs)} s against "
                            f"{TITLES[ours_key]} {fmt(mine)} s (by {fmt(mine - theirs)} s"
                            + (_ONE_DRAW if attr == "alarm_delay_s" and sh.replicas
                               and not independent_copies
                               else _spread(sh, ours_key, key, mine - theirs, attr,
                                            period_s))
                            + ("" if exact is None else _burrows_part(exact, theirs)) + ")"
                        )
            mine = ours.alarm_delay_s
            for key, delay in sh.offset_alert_s.items():
                if mine is None or delay is None or not math.isfinite(delay):
                    continue
                if not math.isfinite(mine) or abs(delay) < abs(mine) - BEATS_FROM_S:
                    found.setdefault("first alert of an offset-lag alert", []).append(
                        f"{name}: the offset-lag alert on {TITLES.get(key, key)} "
                        f"{fmt(abs(delay))} s against {TITLES[ours_key]} {fmt(abs(mine))} s "
                        f"(by {fmt(abs(mine) - abs(delay))} s"
                        + (_ONE_DRAW if sh.replicas and not independent_copies else
                           _beyond(offset_alert_gap_se(sh, ours_key, key),
                                   abs(mine) - abs(delay)))
                        + ")"
                    )
                    fixes["first alert of an offset-lag alert"] = _OFFSET_ALERT_FIX
    if "accuracy" in found and shapes:
        runs = [r.result.run for sh in shapes for r in sh.replicas or [sh]]
        ours_period, before = cycle_period_s(runs), measured_before_publication_s(runs)
        fixes["accuracy"] = (_ACCURACY_FIX.format(
            period=period_s, ours_period=fmt(ours_period) if ours_period else "—",
            measured_before=fmt(before) if before is not None else "—")
            + ". In this run: "
                             + _timing(shapes, t0_ms, end_ms, period_s, onset_window_s,
                                       threshold_s))
    labels = {
        ("steady", "cpu_per_round_s"): "CPU per steady round",
        ("steady", "peak_rss_mib"): "peak RSS",
        ("first", "round_s"): "first round's duration",
        ("steady", "round_s"): "steady round's duration",
        ("first", "requests"): "Kafka requests in the first round",
        ("steady", "metrics_bytes"): "/metrics size",
    }
    latest = [c for c, _earlier in _latest_per_size(costs)]  # a later run of a size supersedes
    for cost, sc in ((c, sc) for c in latest for sc in c["scenarios"]):
        name = sc["name"]
        peers = sorted({r["tool"] for r in cost["results"]} - {"ours", "ours_stats"})
        for key in peers:
            for path, label in labels.items():
                r = ratio(
                    _cost_median(cost, name, key, path), _cost_median(cost, name, "ours", path)
                )
                gave_up = _gave_up(cost, name, key)
                if r is None or r >= 0.8 or (gave_up and path == ("steady", "metrics_bytes")):
                    continue  # a /metrics emptied by abandoned rounds is no smaller exposition
                found.setdefault(label, []).append(
                    f"{sc['title']}: {TITLES.get(key, key)} {ratio_text(r)}"
                    + (" while abandoning rounds at its timeout" if gave_up else "")
                )
                fixes[label] = _METRIC_FIX.get(path, "")
        ours_cpu = _cost_median(cost, name, "ours", ("steady", "cpu_per_round_s"))
        burrow = _cost_median(cost, name, "ours", ("steady", "burrow_cpu_per_round_s"))
        if ours_cpu is None or burrow is None:
            continue
        for key in peers:
            v = _cost_median(cost, name, key, ("steady", "cpu_per_round_s"))
            r = ratio(v, ours_cpu + burrow)
            if v is not None and r is not None and r < 1:
                label = "CPU per steady round, counting Burrow"
                found.setdefault(label, []).append(
                    f"{sc['title']}: {TITLES.get(key, key)} {v:.3f} s against ours "
                    f"{ours_cpu:.3f} s + Burrow {burrow:.3f} s ({ratio_text(r)})"
                )
                fixes[label] = _BURROW_FIX
    lines = []
    for label, cases in found.items():
        text = f"- **{label[0].upper() + label[1:]}** ({'; '.join(cases)})."
        if fixes.get(label):
            text += f" {fixes[label]}."
        lines.append(text)
    return lines or ["- Nowhere in this run."]


_OFFSET_ALERT_FIX = (
    "The offset-lag alert's threshold in records is the run's own produce rate before the "
    "onset times the time threshold (under \"Offsets-only tools' alert thresholds\"): a "
    "figure an operator cannot set in advance, exact only while that rate holds (at a rate "
    "10× lower it fires 10× late). With it, a tool that reads offsets from Kafka at each "
    "scrape alerts at its first read after the crossing. Ours' gauge alerts at its first "
    "cycle published after the crossing (up to a cycle later, the split under Accuracy), as "
    "every tool that polls does; the rule, exact at every evaluation, at its first read-out "
    "after it (one per Prometheus scrape of ours), so between the rule and such a tool which "
    "comes first is where the reads fall. The shipped alerts use the rule"
)


#: Why a first alert's gap gets no standard error in a run whose copies of a shape were a
#: fraction of a cycle apart: they reach the threshold within one cycle of each other, so they
#: meet the same one or two polls of a tool and the same reads of its sampler.
_ONE_DRAW = ("; one crossing per copy, and the copies, a fraction of a cycle apart, meet it at "
             "the same one or two polls and reads: not independent draws, so no standard error")


def _exact_offsets_s(sh: CompareShape, attr: str, t0_ms: float, end_ms: float,
                     period_s: float, onset_window_s: float) -> float | None:
    """Ours' cycles given the exact committed offsets, scored as ``attr`` scores the gauge
    (mean |error| over the run, or error after onset); None for another score."""
    runs = [r.result.run for r in sh.replicas or [sh]]
    if attr == "mean_abs_s":
        return exact_offsets_error_s(runs, lambda _r: [(t0_ms, end_ms)], period_s)
    if attr == "onset_s":
        return exact_offsets_error_s(runs, onset_windows(t0_ms, onset_window_s), period_s)
    return None


def _burrows_part(exact: float, theirs: float) -> str:
    """Whether the gap is Burrow's: ours' cycles given the exact offsets against the peer."""
    if exact <= theirs:
        return (f"; ours' cycles given the exact offsets {fmt(exact)} s, not above the peer: "
                "the gap is Burrow's offsets")
    return (f"; ours' cycles given the exact offsets {fmt(exact)} s, still above the peer: "
            "not Burrow's offsets alone")


def _spread(sh: CompareShape, ours_key: str, key: str, gap: float,
            attr: str = "mean_abs_s", period_s: float = math.nan) -> str:
    """Whether a gap in ``attr`` exceeds twice its standard error ("" without one): a gap within
    it could be where the polls and reads fell. Across phases, the two tools paired by phase;
    a gap after onset across the clock's periods of ``period_s`` (:func:`onset_gap_se`)."""
    if attr == "onset_s" and math.isfinite(period_s):
        return _beyond(onset_gap_se(sh, ours_key, key, period_s), gap,
                       f"the gaps per {period_s:g} s of the clock")
    return _beyond(paired_gap_se(sh, ours_key, key, attr), gap)


def _beyond(se: float | None, gap: float, of: str = "the phases' gaps") -> str:
    """Whether ``gap`` exceeds twice its standard error ``se`` of ``of`` ("" without one)."""
    if se is None or not math.isfinite(gap):
        return ""
    twice = 2 * se
    return (f", {'beyond' if gap > twice else 'within'} {fmt(twice)} s, twice the standard "
            f"error of {of}")


_BURROW_FIX = (
    "Burrow here refreshes offsets and topics every second (`offset-refresh = topic-refresh = "
    "1`, the accuracy stack's setting; Burrow's defaults are 10 s and 60 s), and that CPU "
    "dominates. A site that runs Burrow anyway pays it already; for one that does not, the peer "
    "is the cheaper process, and ours could close it only by reading offsets from Kafka itself "
    "instead of Burrow (a different design)"
)


_INTRO = """\
Generated from the run records in [`records/comparison/`](records/comparison/) by
`scripts/render_docs.py` (the plots by `python -m benchmarks.compare --from
docs/records/comparison`); the runs are made by `python -m benchmarks.compare`
([`benchmarks/compare/`](../benchmarks/compare/)). It builds on the accuracy harness
([accuracy.md](accuracy.md): its six traffic shapes, real consumer groups and exact ground truth)
and on the proxied real-Kafka stack of [performance.md](performance.md). Every figure below is
computed from a record; a run that failed is shown as failed."""

_HEADLINE_TEXT = """\
Per shape, mean |error| against the ground truth (s) of ours as a scrape of the gauge reads it,
of ours as Prometheus' query-time rule gives it (the gauge carried forward to the query's time,
docs/querytime.md; the expression each run scored is named under "What ran"; evaluated by a
real Prometheus from the chart's rules rendered for the run's intervals), and of the best peer that
exports a time lag (a peer with no number in more than 5 % of the samples is not counted); then
the first alert above {threshold:g} s relative to the truth's crossing (negative: before)."""

_SPREAD_TEXT = """\
± is one standard error of the pooled mean |error| across the run's {n} phases: the sample
standard deviation of the phases' own mean |error| ÷ √{n} (the pooled mean weights each phase
by its samples; the phases' counts are nearly equal). Under "Where a peer beats us" a gap in
mean |error| is set against twice the standard error of the per-phase gaps between the two
tools (paired by phase: both measured the same events in each phase, so a phase's luck that
hit both cancels). A gap in error after onset is set against twice the standard error of the
gaps per poll interval of the clock: the phases' windows after onset overlap in time, so they
meet the same reads and polls, and their gaps move together."""

_SPREAD_ALERT_TEXT = """
A gap in first alert is set against twice the standard error of the per-phase gaps too: the
copies sat whole cycles apart (under "Accuracy"), so each copy's crossing met polls and reads
of its own and the copies' first alerts are independent draws."""

_OTHER_TEXT = """\
The other time figures ours exports, scraped on the same grid and scored raw against the
harness's own log: commit lag (`kafka_consumer_commit_lag_ms`, the last commit's time minus the
append time of the last record it committed), "data current as of"
(`kafka_consumer_group_data_current_as_of_timestamp_seconds`, that record's append time) and,
on the outage-then-catch-up shape, the catch-up estimate
(`kafka_consumer_group_catch_up_estimate_seconds`): each estimate read while the group catches
up predicts the moment the lag reaches 0 (read time + estimate); its error is that moment minus
the moment the truth reached 0 (positive: predicted too late)."""

_ACC_TEXT = """\
Same stack, same groups, same traffic, same run: {duration:.0f} s of the six shapes, every tool
polling every {freq:g} s (ours' `frequency_sec`, klag's `poll_interval`; the `30 s` klag rows at
its own default); {sampling}. Run of {when}, {wall:.1f} min wall time. Every tool is scored raw,
as a scrape sees it, by the harness's own scorer: mean and max |error| against the ground truth,
the mean |error| over the {window:g} s after the shape's onset (burst, stall, outage) and after
its recovery, seconds above the {threshold:g} s threshold while the truth was below it, and,
where the truth crosses the threshold after an onset, when the tool first alerted relative to
the truth's crossing (negative: before). Ours' rule row is a Prometheus range query of the
recording rule's expression {rule_grid}. "No number": samples where the tool exported no time
lag or +∞. The two ports are evaluated at Burrow's sampling instant, with no publication delay
of their own; that favours them by up to one poll. Offsets-only tools (kafka_exporter, kminion)
have no time lag: their row is when an offset-lag alert fires, at the threshold listed under the
table."""

def rule_grid_text(after_scrape_s: float | None, step_s: float | None = None) -> str:
    """Where the rule's read-out grid lies relative to Prometheus' scrapes of ours."""
    if after_scrape_s is None:
        return "on the same grid, as a dashboard evaluates it"
    every = ("of the same interval" if step_s is None else
             f"of Prometheus' scrapes of ours, every {step_s:g} s (an interval that does not "
             "divide `frequency_sec`, so over the run they fall at every phase of ours' cycles),")
    return (
        f"on a grid {every} placed {after_scrape_s:g} s after each of Prometheus' "
        "scrapes of ours, as a dashboard evaluates it: the rule then works from data as fresh "
        "as the harness's own reads of the gauge and of every peer (a dashboard at another "
        "phase gives every tool up to one scrape interval of older data, which the rule alone "
        "ages with the clock)"
    )


_COST_TEXT = """\
Each tool alone in turn on a 3-node Apache Kafka behind frame proxies that count every request
per API, with Burrow running throughout, every tool polling at the same interval; one run per
size, each on a fresh stack (the runs below say when, how long, and what differed).
*First round*: from the process's start to its first complete round (every partition
exported), the tool's own duration of that round (ours:
`freshness_tracker_cluster_cycle_duration_seconds`, klag:
`kafka_lag_exporter_scrape_duration_seconds`, kafka_exporter: the scrape, since it collects on
scrape), and CPU seconds and Kafka requests since the start (start-up included; ours' timestamp
cache is cold: every lagging partition is read, as when every offset moved). *Steady rounds*:
the next rounds with nothing moving, one scrape per round as Prometheus would; CPU and
requests per round, peak RSS (VmHWM) and `/metrics` size at the end. Ours gets its offsets
from Burrow: Burrow's Kafka traffic uses the brokers' internal listener and is not counted, its
CPU over ours' window is the "+ Burrow" row (with `offset-refresh = 1`, ten times Burrow's
default rate: it is the accuracy stack's setting). A deployment that already runs Burrow pays
that anyway; one that does not should add it to ours.

librdkafka's statistics (`statistics.interval.ms`) start a timer per partition of every topic
a consumer has handled, and each firing can send a ListOffsets and open a connection; they are
off in ours unless a cluster's `kafka` properties set them (`ours_stats` measures them on).
`python -m benchmarks.compare.lag_timer` reproduces the requests on librdkafka's mock
cluster."""

_CANNOT = """\
## What each tool cannot do

- **freshness-tracker** needs Burrow (offsets and group status come from its REST API): a commit
  is visible only once Burrow has read it, and log end offsets only at Burrow's
  `offset-refresh`. No OpenTelemetry push (Prometheus exposition only).
- **klag-exporter, "message"** reads the record at the committed offset, like us, but re-reads
  after its cache TTL even when nothing moved; no reading of the record before a caught-up
  group's commit (so no commit lag or "data current as of"). It caches the topic list for
  `metadata_cache_ttl` (300 s by default): a partition created after its last refresh is
  exported with lag 0 until then, which is why the peers start once the harness's topics
  exist. A round longer than its collection timeout is abandoned.
- **klag-exporter, "rate"** (its default) estimates: offset lag ÷ the high watermark's rate over
  its last polls. Right while the produce rate is steady; no number when the producer is idle
  (exactly when a stuck consumer on a quiet topic matters), and wrong by the ratio of rates
  when traffic changes (the stuck shape's nightly drop).
- **kafka_exporter / kminion** export offsets only: any time figure has to be estimated in
  PromQL from offset rates (the `rate` row's method), with the same failure modes; both ask
  Kafka on every scrape.
- **Consumer Freshness Tracker** (kafka-helmsman) reads Burrow like us and the record at the
  committed offset per partition; it exports freshness per partition as of its last run.
- **kafka-lag-exporter** (archived) interpolates a table of (offset, time) points: see the
  interpolation rows and [accuracy.md](accuracy.md) for its runaway extrapolation."""

_REPRODUCE = """\
## Reproduce

```sh
python -m benchmarks.compare               # both parts; writes a record, re-renders the pages
python -m benchmarks.compare --skip-cost   # accuracy only (480 s of traffic)
python -m benchmarks.compare --skip-accuracy --partitions 20000 --fleet 20000
python -m benchmarks.compare --from docs/records/comparison   # re-render pages and plots
.venv/bin/python scripts/render_docs.py --check              # the pages match the records
```

Peers' binaries are looked up under `~/.cache/freshness-tracker/peers` (`FT_PEERS_DIR`), each
with the `VERSION` line its build wrote; Prometheus is Debian's `prometheus`. `--help` lists
every option."""
