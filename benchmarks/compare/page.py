"""The text of ``docs/comparison.md`` (and the README's short table) from the saved runs."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.accuracy.harness import RunData
from benchmarks.accuracy.report import fmt
from benchmarks.compare.accuracy import CompareShape
from benchmarks.compare.report import (
    ACC_COLUMNS,
    TITLES,
    _score,
    accuracy_table,
    cost_table,
    machine,
    plot_shape,
)
from benchmarks.compare.stats import ratio, ratio_text

__all__ = ["render"]

DOCS = Path(__file__).resolve().parents[2] / "docs"


def render(
    run: RunData | None,
    shapes: Sequence[CompareShape] | None,
    acc: dict[str, Any] | None,
    costs: Sequence[dict[str, Any]],
    img_dir: Path,
    plots: bool = True,
    failed: Sequence[dict[str, Any]] = (),
) -> tuple[str, str]:
    """The page and the README's table. `costs`: one saved cost run per size, smallest first;
    `failed`: sizes whose run did not complete (named on the page with the error)."""
    skipped = {**(acc or {}).get("skipped", {})}
    for cost in costs:
        skipped |= cost.get("skipped", {})
    parts = [
        "# Side by side: freshness-tracker and the tools users would pick instead",
        "",
        _INTRO,
        "",
        "## What ran",
        "",
        *_versions(acc, costs, skipped),
        "",
    ]
    readme_rows: list[str] = []
    if run is not None and shapes is not None:
        cfg = run.config
        when = (acc or {}).get("when", "")
        parts += [
            "## Accuracy",
            "",
            _ACC_TEXT.format(
                duration=cfg.duration_s,
                freq=cfg.frequency_s,
                interval=cfg.sample_interval_s,
                threshold=cfg.threshold_s,
                window=cfg.moment_window_s,
                when=when,
                wall=run.wall_s / 60,
            ),
            "",
            accuracy_table(shapes, cfg),
            "",
            *_acc_summary(shapes),
            "",
        ]
        rel = Path(os.path.relpath(img_dir, DOCS))
        for shape in shapes:
            name = shape.result.run.shape.name
            if plots:
                plot_shape(shape, img_dir / f"compare-{name}.png", cfg)
            parts += [
                f"### {shape.result.run.shape.title} (`{name}`)",
                "",
                f"![{name}]({(rel / f'compare-{name}.png').as_posix()})",
                "",
            ]
        readme_rows += _readme_accuracy(shapes)
    if costs or failed:
        parts += ["## Cost at equal work", "", _COST_TEXT, ""]
        for failure in failed:
            parts += [_failed_text(failure), ""]
        for cost in costs:
            parts += _cost_section(cost)
        for cost, earlier in _latest_per_size(costs):
            readme_rows += _readme_cost(cost, earlier)
    parts += [
        "## Where a peer beats us, and what would close it",
        "",
        *_beats(shapes, costs),
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


def _versions(
    acc: dict[str, Any] | None, costs: Sequence[dict[str, Any]], skipped: dict[str, str]
) -> list[str]:
    from benchmarks.compare.peers import KMINION_VERSION, kafka_exporter_bin, klag_bin

    lines = [f"- Machine: {machine()}."]
    if acc is not None:
        lines.append(
            "- Accuracy: one-node Apache Kafka 3.9.1 (KRaft) + Debian's Burrow 1.2.1 "
            "(`offset-refresh = 1`), devstack's `RealStack()` as the accuracy harness runs "
            "it: on this shared 2-core machine, six shapes with real groups and four "
            "exporters beside three broker JVMs would measure the machine's load more than "
            "the tools (the 3-node stack is the cost part's)."
        )
    for cost in costs:
        lines.append(
            f"- Cost, {_sizes(cost)} (run of {cost.get('when', '')[:16].replace('T', ' ')} "
            f"UTC): {cost['nodes']}-node Apache Kafka {cost['kafka_version']} "
            f"(KRaft, RF {cost.get('replication_factor', cost['nodes'])}, frame proxies "
            f"counting requests) + {cost['burrow']} Burrow."
        )
    lines += [
        "- freshness-tracker: this tree, `python -m freshness_tracker run`, default settings "
        "except `frequency_sec`.",
        f"- klag-exporter 0.1.22: `cargo install klag-exporter --version 0.1.22 --locked` "
        f"({'built into ' + _home(klag_bin()) if klag_bin() else 'not built'}); its defaults "
        'except `poll_interval` (= ours\' frequency), `granularity = "partition"` (ours exports '
        'partitions) and `timestamp_sampling.mode`, run twice: `"message"` (reads the record '
        'at the committed offset, like us) and `"rate"` (its default: offset lag ÷ the high '
        "watermark's rate over its last 5 polls).",
        "- kafka_exporter 1.9.0: "
        + (
            f"built locally from the v1.9.0 tag ({_home(kafka_exporter_bin())}; `go install` of "
            "the module is refused by the Go module proxy, 403, but the tag's source builds with "
            "its dependencies from the proxy: `benchmarks/compare/build_peers.sh`); offsets "
            "only, it collects on every scrape."
            if kafka_exporter_bin()
            else "not built."
        ),
        f"- kminion {KMINION_VERSION}: **not run**. `go install "
        f"github.com/cloudhut/kminion/v2@v{KMINION_VERSION}` is refused by the Go module proxy "
        "(403 for that module), and the GitHub snapshot this machine can reach ends at "
        "2021-06-22 (tags up to v2.1.0), so v2.3.5's source is not available here. kminion, like "
        "kafka_exporter, exports offsets only.",
        "- Burrow 1.9.5's `/metrics`: **not run**: its module is refused by the Go module proxy "
        "(403) too, and Debian's Burrow 1.2.1, which we run, has no `/metrics` endpoint at all "
        "(only the REST API ours reads).",
        "- kafka-lag-exporter (interpolation) and lag ÷ rate: our own ports "
        "(`benchmarks/accuracy/estimators.py`), run on the very Burrow samples ours used; the "
        "archived Scala project cannot be built from the registries.",
    ]
    for tool, why in skipped.items():
        lines.append(f"- not run this time: {tool}: {why}.")
    return lines


def _sizes(cost: dict[str, Any]) -> str:
    return " and ".join(sc["title"] for sc in cost["scenarios"]) or "no scenario"


def _cost_section(cost: dict[str, Any]) -> list[str]:
    """One saved cost run: how it ran, then its tables (one per repetition and scenario)."""
    nodes = cost["nodes"]
    rf = cost.get("replication_factor", nodes)
    topics = cost.get("topic_counts", {})
    tools = "; ".join(dict.fromkeys(TITLES[r["tool"]] for r in cost["results"]))
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
    if rf < nodes:
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
    return parts


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
    for key in ACC_COLUMNS:
        scored = [(s, sh.result.run.shape.name) for sh in shapes if (s := _score(sh, key))]
        if not scored:
            continue
        means = [(s.mean_abs_s, n) for s, n in scored if math.isfinite(s.mean_abs_s)]
        false = sum(s.false_alarm_s for s, _ in scored)
        stuck = next((s.alarm_delay_s for s, n in scored if n == "stuck"), None)
        none = [n for s, n in scored if s.nan_pct or s.inf_pct]
        text = f"- **{TITLES[key]}**: "
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
    "Python; klag's rate mode does arithmetic in Rust on a handful of Kafka answers. At 20,000 "
    "partitions most of ours' steady CPU was librdkafka's statistics, on by default until this "
    "comparison found it: a timer and a statistics entry per partition of every topic a pool "
    "consumer has read (2 consumers × 20,000 partitions, documents of tens of MB every 10 s). "
    "They are now opt-in; the runs with `ours_stats` measure both in the same run. What is "
    "left: skipping the per-partition work for groups whose Burrow answer has not changed since "
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
    "commit lag and data-current-as-of of caught-up groups. On this shared machine (load "
    "average between 3 and 25 during the runs) round durations under a second differ by more than "
    "2× between repetitions: compare the repetitions before reading much into these",
    ("steady", "round_s"): "Ours' steady cycle is Burrow's REST answers (one `/lag` request per "
    "group) plus building the snapshot; its duration is mostly Burrow's and Python's, not Kafka's",
    ("steady", "metrics_bytes"): "",
    ("first", "requests"): "Ours' first round reads the records it measures: two per lagging "
    "partition, batched per leader (about 270 Fetch requests for 40,000 reads at 20,000 "
    "partitions); klag's rate mode reads no record at all, it divides offset lag by a rate (the "
    "accuracy part shows what that costs). Not to be closed without estimating instead of "
    "measuring",
}


_ACCURACY_FIX = (
    "Ours reads committed offsets from Burrow, which sees a commit only once it has read it from "
    "`__consumer_offsets` (and log end offsets at its `offset-refresh`); klag asks the brokers "
    "at each poll. The difference shows where the truth moves fast: a commit that clears a "
    "backlog, a group catching up. Reading committed offsets from Kafka (OffsetFetch, one "
    "request per group) instead of Burrow's `/lag` would close it; not done here: Burrow is the "
    "design's single source of offsets and group status"
)


def _beats(
    shapes: Sequence[CompareShape] | None, costs: Sequence[dict[str, Any]]
) -> list[str]:
    """One bullet per reason, naming every case of this run where a peer beat us."""
    found: dict[str, list[str]] = {}
    fixes: dict[str, str] = {}
    for sh in shapes or []:
        ours = sh.result.scores["ours"]
        for key in ("klag_message", "klag_rate"):
            s = sh.peers.get(key)
            if s is None or not math.isfinite(s.mean_abs_s) or s.nan_pct + s.inf_pct > 5:
                continue  # a mean over the samples where it said nothing is no win
            if s.mean_abs_s < 0.8 * ours.mean_abs_s and ours.mean_abs_s - s.mean_abs_s > 0.05:
                found.setdefault("accuracy", []).append(
                    f"{sh.result.run.shape.name}: {TITLES[key]} {fmt(s.mean_abs_s)} s against "
                    f"ours {fmt(ours.mean_abs_s)} s"
                )
                fixes["accuracy"] = _ACCURACY_FIX
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
        for key in ("klag_message", "klag_rate", "kafka_exporter"):
            for path, label in labels.items():
                r = ratio(
                    _cost_median(cost, name, key, path), _cost_median(cost, name, "ours", path)
                )
                gave_up = _gave_up(cost, name, key)
                if r is None or r >= 0.8 or (gave_up and path == ("steady", "metrics_bytes")):
                    continue  # a /metrics emptied by abandoned rounds is no smaller exposition
                found.setdefault(label, []).append(
                    f"{sc['title']}: {TITLES[key]} {ratio_text(r)}"
                    + (" while abandoning rounds at its timeout" if gave_up else "")
                )
                fixes[label] = _METRIC_FIX.get(path, "")
        ours_cpu = _cost_median(cost, name, "ours", ("steady", "cpu_per_round_s"))
        burrow = _cost_median(cost, name, "ours", ("steady", "burrow_cpu_per_round_s"))
        if ours_cpu is None or burrow is None:
            continue
        for key in ("klag_message", "klag_rate", "kafka_exporter"):
            v = _cost_median(cost, name, key, ("steady", "cpu_per_round_s"))
            r = ratio(v, ours_cpu + burrow)
            if v is not None and r is not None and r < 1:
                label = "CPU per steady round, counting Burrow"
                found.setdefault(label, []).append(
                    f"{sc['title']}: {TITLES[key]} {v:.3f} s against ours {ours_cpu:.3f} s + "
                    f"Burrow {burrow:.3f} s ({ratio_text(r)})"
                )
                fixes[label] = _BURROW_FIX
    lines = []
    for label, cases in found.items():
        text = f"- **{label[0].upper() + label[1:]}** ({'; '.join(cases)})."
        if fixes.get(label):
            text += f" {fixes[label]}."
        lines.append(text)
    return lines or ["- Nowhere in this run."]


_BURROW_FIX = (
    "Burrow here refreshes offsets and topics every second (`offset-refresh = topic-refresh = "
    "1`, the accuracy stack's setting; Burrow's defaults are 10 s and 60 s), and that CPU "
    "dominates. A site that runs Burrow anyway pays it already; for one that does not, the peer "
    "is the cheaper process, and ours could close it only by reading offsets from Kafka itself "
    "instead of Burrow (a different design)"
)


_INTRO = """\
Generated by `python -m benchmarks.compare` ([`benchmarks/compare/`](../benchmarks/compare/)):
every number and plot below comes from the runs named here. It builds on the accuracy harness
([accuracy.md](accuracy.md): its six traffic shapes, real consumer groups and exact ground truth)
and on the proxied real-Kafka stack of [performance.md](performance.md). The peers are built
from their public releases on this machine; none is a dependency of the package or of CI, and
each binds 127.0.0.1 only."""

_ACC_TEXT = """\
Same stack, same groups, same traffic, same run: {duration:.0f} s of the six shapes, every tool
polling every {freq:g} s (ours' `frequency_sec`, klag's `poll_interval`), every tool's `/metrics`
scraped every {interval:g} s ({when}, {wall:.1f} min wall time). Every tool is scored raw, as a
Prometheus scrape sees it, by the harness's own scorer: mean and max |error| against the ground
truth, the mean |error| over the {window:g} s after the shape's onset (burst, stall, outage) and
after its recovery, seconds above the {threshold:g} s threshold while the truth was below it,
and, where the truth crosses the threshold after an onset, when the tool first alerted relative
to the truth's crossing (negative: before). "No number": samples where the tool exported no time
lag (klag's rate mode omits the series below 0.01 records/s) or +∞ (our lag ÷ rate port).
The two ports are evaluated at Burrow's sampling instant, with no publication delay of their
own; that favours them by up to one poll. kafka_exporter has no time lag: its row is when an
offset-lag alert fires, the threshold being {threshold:g} s × the shape's produce rate before the
onset (the best an operator who knew the rate could set)."""

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

Ours' steady rounds read nothing from Kafka (its log: `reads=0`, every timestamp from its
cache), yet the 2,000-partition runs count ListOffsets (18 to 75 per round in the 90 %
caught-up fleet) and a few ApiVersions in them. They were librdkafka's, not ours: with
statistics enabled (ours set `statistics.interval.ms` = 10 s to count its Fetch requests for
`freshness_tracker_kafka_fetch_requests_total`), librdkafka starts a timer for every partition
of every topic a consumer has handled (all partitions of a topic, not only the assigned ones),
and each firing asks the partition's leader for its log start offset with a ListOffsets request
unless the consumer already knows that the broker's Fetch carries the log start (Fetch v5 or
later, learnt from the connection's ApiVersions). A pool consumer that has never talked to a
broker does not know that yet, so 10 s after its first batch in a topic, every partition of that
topic led by such a broker sends one ListOffsets, and the connection this opens (the
ApiVersions) ends it: a one-off per pool consumer and broker, in the steady window only because
that window starts right after the first round. `python -m benchmarks.compare.lag_timer`
reproduces it on librdkafka's mock cluster (no JVM): a consumer that read only one broker's
partitions sent one ListOffsets per partition to each other broker 10 s later, opened a
connection to each, and nothing more over three timer periods. The same statistics cost far
more CPU than requests (an idle consumer holding 10,000 partitions: 2.05 CPU s per 10 s with
them, 0.13 without; the 20,000-partition runs below), so they are now off unless a cluster's
`kafka` properties set `statistics.interval.ms`; the Fetch-request count is then 0."""

_CANNOT = """\
## What each tool cannot do

- **freshness-tracker** needs Burrow (offsets and group status come from its REST API): a commit
  is visible only once Burrow has read it, and log end offsets only at Burrow's
  `offset-refresh`. No OpenTelemetry push (Prometheus exposition only).
- **klag-exporter, "message"** reads the record at the committed offset, like us, but re-reads
  after its cache TTL (60 s) even when nothing moved; no reading of the record before a caught-up
  group's commit (so no commit lag or "data current as of" for caught-up groups); no batching
  per leader (a pool of `max_concurrent_fetches` = 5 consumers reading partition by partition:
  compare the first rounds' Fetch counts above). It caches the topic list for
  `metadata_cache_ttl` (300 s by default): a partition created after its last refresh has no
  high watermark for up to 5 minutes and is exported with offset lag 0 and time lag 0 (both
  modes). In a first run of this comparison, with the peers started before the harness created
  its topics, klag showed 0 for the stuck consumer for ~240 s while the truth rose past 240 s
  (its alert came 229.5 s after the truth's, "message" mode), and never alerted on the burst or
  the outage; the run above starts the peers once the topics exist. Its collection timeout is
  the poll interval up to 10 s and the poll interval − 5 s above: a round that takes longer is
  abandoned, so at 20,000 partitions on this machine, polling every 10 s, the message mode
  exported nothing and the rate mode finished only some of its rounds (both modes).
- **klag-exporter, "rate"** (its default) estimates: offset lag ÷ the high watermark's rate over
  its last 5 polls. Right while the produce rate is steady; no number when the producer is idle
  or slower than 0.01 records/s (exactly when a stuck consumer on a quiet topic matters), and
  wrong by the ratio of rates when traffic changes (the stuck shape's nightly drop).
- **kafka_exporter / kminion** export offsets only: any time figure has to be estimated in
  PromQL from offset rates (the `rate` row's method), with the same failure modes.
  kafka_exporter collects on every scrape, three ListOffsets per partition: at 20,000
  partitions a scrape took 22–31 s here, longer than a 10 s scrape interval.
- **kafka-lag-exporter** (archived) interpolates a table of (offset, time) points: see the
  interpolation rows and [accuracy.md](accuracy.md) for its runaway extrapolation."""

_REPRODUCE = """\
## Reproduce

```sh
benchmarks/compare/build_peers.sh          # klag-exporter (cargo) and kafka_exporter (go build)
python -m benchmarks.compare               # both parts at 2,000 partitions (~35 min)
python -m benchmarks.compare --skip-accuracy --partitions 20000 --fleet 20000
python -m benchmarks.compare --skip-cost --duration 120   # a quick accuracy look
python -m benchmarks.compare --from build/compare         # re-render from saved runs
```

`--partitions`, `--fleet`, `--fleet-share`, `--poll`, `--rounds`, `--reps`, `--tools` change the
cost part; `--help` lists everything. The raw runs are `build/compare/accuracy.json` and one
`cost-<partitions>.json` per size (`cost-<partitions>-<tools>.json` when `--tools` named
fewer than all; a run replaces only its own file, the page shows every run saved)."""
