"""The figure blocks of docs/performance.md, docs/scale.md and docs/spark.md, from run records.

Each benchmark writes its run record with `--record docs/records/<page>` (benchmarks.common
`RunRecord`); `pages(root)` fills the pages' blocks from those files alone, so every figure the
pages show can be traced to a committed run and re-rendered by `scripts/render_docs.py`. The
machine the benchmarks run on is shared, so the blocks lead with the same-run ratios and give
absolute times only where a record holds them, next to the load they were measured under. A
failed run shows as failed with no figures; a missing record says how to make one.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from devstack.records import (
    FAILED,
    INCOMPLETE,
    load_record,
    no_record_block,
    read_page,
    record_path,
    replace_block,
    run_outcome,
    source_comment,
)
from freshness_tracker.metrics import FRESHNESS

__all__ = ["PAGES", "pages"]

Record = Mapping[str, Any]
Block = Callable[[Record], str]

PERFORMANCE, SCALE, SPARK = "docs/performance.md", "docs/scale.md", "docs/spark.md"


# --- shared pieces ------------------------------------------------------------------------------


def _x(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}×"


def _bold(text: str) -> str:
    return text if text == "—" else f"**{text}**"


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 100):
        return f"{int(value):,}"
    return f"{value:.{digits}f}"


def _span(values: Iterable[float | None], fmt: Callable[[float | None], str]) -> str:
    """One value, or the lowest–highest of several (per broker, per run)."""
    got = sorted({v for v in values if v is not None})
    if not got:
        return "—"
    return fmt(got[0]) if len(got) == 1 else f"{fmt(got[0])}–{fmt(got[-1])}"


def _int(value: Any) -> int:
    """A count from a record (benchmarks keep their arguments as text)."""
    return int(value)


def _props(value: Any) -> str:
    """librdkafka properties from a record's arguments (None, a list, or its text)."""
    if isinstance(value, str):
        value = None if value == "None" else ast.literal_eval(value)
    return ", ".join(f"`{v}`" for v in value) if value else "none"


def _load(values: list[float] | None) -> str:
    return "/".join(f"{v:.1f}" for v in values) if values else "—"


def _versions(record: Record) -> str:
    v = record.get("versions", {})
    return ", ".join(f"{k} {v[k]}" for k in sorted(v))


def run_line(record: Record, where: str) -> str:
    """Where a block's figures come from: command, when, versions, the machine and its load."""
    machine = record.get("machine", {})
    line = (f"Run record [`{where}`]({where.removeprefix('docs/')}): "
            f"`{record.get('command', '?')}`, {record.get('started', '?')} to "
            f"{record.get('finished', '?')} (UTC); {machine.get('cores', '?')} cores, load "
            f"average (1/5/15 min) {_load(machine.get('load_start'))} at the start and "
            f"{_load(machine.get('load_end'))} at the end; {_versions(record)}.")
    outcome = run_outcome(record)
    if outcome == FAILED:
        reason = record.get("error", "no reason recorded")
        line += f"\n\n**This run failed** ({reason}): no figures."
    elif outcome == INCOMPLETE:
        line += "\n\n**This run is incomplete**: no figures."
    return line


def _block(root: Path, relative: str, how: str, body: Block, first: bool = True) -> str:
    """The block for record `relative` (under docs/records): its source, the run line (in the
    page's first block from that record), and `body`'s figures when the run passed."""
    where = f"docs/records/{relative}"
    record = load_record(record_path(root, relative))
    if record is None:
        return f"{source_comment(where)}\n{no_record_block(where, how)}"
    outcome = run_outcome(record)
    if first:
        head = f"{source_comment(where)}\n{run_line(record, where)}"
    elif outcome in (FAILED, INCOMPLETE):
        head = f"{source_comment(where)}\nThe run was {outcome} (above): no figures."
    else:
        head = source_comment(where)
    if outcome in (FAILED, INCOMPLETE):
        return head
    return f"{head}\n\n{body(record)}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --- performance: bench_cycle, bench_caught_up ---------------------------------------------------


def _rtts(record: Record) -> list[tuple[str, str, Record, Record]]:
    """(nodes, RTT, summary, ratios) in order."""
    out = []
    for nodes, run in sorted(record["values"]["nodes"].items(), key=lambda kv: int(kv[0])):
        for rtt, summary in sorted(run["summary"].items(), key=lambda kv: float(kv[0])):
            out.append((nodes, rtt, summary, record["ratios"][nodes][rtt]))
    return out


def _stack(record: Record, nodes: str) -> str:
    run = record["values"]["nodes"][nodes]
    burrow = str(run["burrow"]).removeprefix("Debian's ")
    return f"Kafka {run['kafka_version']} + Burrow {burrow}"


def cycle_ratios(record: Record) -> str:
    args = record["values"]["args"]
    rows = []
    for nodes, rtt, s, r in _rtts(record):
        rows.append([_stack(record, nodes), nodes, f"{rtt} ms", f"**{_x(r['cycle_ratio'])}**",
                     f"**{_x(r['engine_ratio'])}**",
                     f"{s['batched_cycle_failures']} / {s['naive_cycle_failures']}",
                     str(s["not_found_engine"])])
    intro = (f"{_num(_int(args['partitions']))} lagging partitions (lag {args['min_lag']}–"
             f"{args['max_lag']} records), {args['reps']} timed repetitions; each ratio is naive "
             "÷ batched time within one repetition, the median over the repetitions. Naive "
             f"reader: `fetch.wait.max.ms={args['naive_fetch_wait_ms']}`, the engine's consumer "
             f"config otherwise; extra naive properties: {_props(args['naive_prop'])}.")
    return intro + "\n\n" + _table(
        ["stack", "brokers", "added RTT", "cycle ×", "engine ×",
         "failed reads (batched / naive cycle)", "engine reads not FOUND"], rows)


def cycle_fetches(record: Record) -> str:
    rows = []
    for nodes, rtt, s, _r in _rtts(record):
        per_batch = s["fetch_per_broker_per_batch"]
        naive = s["naive_fetch_per_broker_partition"]
        per_lookup = s["fetch_per_lookup"]
        rows.append([
            nodes, f"{rtt} ms",
            _span(per_batch.get("batched_cycle", {}).values(), _num),
            _span(per_batch.get("batched_engine", {}).values(), _num),
            _span([v.get("proxy") for k, v in per_lookup.items() if k.startswith("batched")],
                  lambda v: _num(v, 4)),
            _span([x for k, v in naive.items() for x in v.values()], _num),
            f"{s['second_cycle_reads']} / {_num(s['second_cycle_cache_hits'])} / "
            f"{s['second_cycle_fetch_frames']}",
        ])  # fmt: skip
    return _table(["brokers", "added RTT", "batched cycle: Fetch per broker per batch",
                   "batched engine: Fetch per broker per batch", "batched: Fetch per lookup",
                   "naive: Fetch per partition", "second cycle: reads / cache hits / Fetch"],
                  rows)  # fmt: skip


def cycle_rss(record: Record) -> str:
    rows = []
    for nodes, run in sorted(record["values"]["nodes"].items(), key=lambda kv: int(kv[0])):
        rss = run.get("rss")
        if rss is None:
            continue
        alt = rss.get("alt_all_peaks_mib")
        rows.append([nodes, _span(rss["all_peaks_mib"], lambda v: f"{v:.0f}"),
                     f"{rss['before_cycle_mib']:.0f}", f"{rss['reads']} ({rss['read_failures']})",
                     _span(alt, lambda v: f"{v:.0f}") if alt else "—"])
    if not rows:
        return "The 1 MiB-records run was skipped in this record (`--big-partitions 0`)."
    args = record["values"]["args"]
    return (f"{args['big_partitions']} lagging partitions of 1 MiB records, one cycle of the "
            f"default exporter in a fresh process, {args['rss_reps']} times per broker count "
            "(VmHWM, MiB):\n\n" + _table(
                ["brokers", "peak RSS", "RSS before the cycle", "reads (failed)",
                 f"peak RSS with {_props(args['compare_prop'])}"], rows))


def cycle_compare(record: Record) -> str:
    rows = []
    for nodes, rtt, s, r in _rtts(record):
        if "alt_cycle_ratio" not in r:
            continue
        rows.append([nodes, f"{rtt} ms", f"**{_x(r['alt_cycle_ratio'])}**",
                     _x(r["alt_engine_ratio"]), _num(r["alt_over_default_cycle"]),
                     _num(r["alt_over_default_engine"]), str(s["alt_cycle_failures"])])
    if not rows:
        return "This record has no in-run comparison (`--compare-prop`)."
    prop = _props(record["values"]["args"]["compare_prop"])
    return (f"The batched steps again with {prop}, alternating with the default ones, against "
            "the same naive runs:\n\n" + _table(
                ["brokers", "added RTT", "cycle × naive", "engine × naive",
                 "cycle time ÷ default's", "engine time ÷ default's", "failed reads"], rows))


def caught_up(record: Record) -> str:
    v, r = record["values"], record["ratios"]["on_over_off"]
    s = v["summary"]
    failures = v.get("read_failures", {})
    rows = [[label, _num(s[phase]["reads"]), str(failures.get(phase, "not recorded")),
             _num(s[phase]["cache_hits"]), _num(s[phase]["with_commit_lag"])]
            for phase, label in (("off", "`false`"), ("on", "`true`, offsets moved"),
                                 ("on_again", "`true`, no offset moved"))]  # fmt: skip
    return (f"{v['stack']}; {_num(int(v['args']['partitions']))} caught-up partitions, every "
            f"group committing every cycle, {v['args']['rounds']} timed rounds (medians). Same "
            f"run, `true` ÷ `false` per round: **CPU {_x(r['cpu'])}**, wall {_x(r['wall'])}.\n\n"
            + _table(["`commitLagWhenCaughtUp`", "Kafka reads", "failed reads (worst round)",
                      "cache hits",
                      "caught-up partitions with a commit lag"], rows))


# --- scale: bench_scale ------------------------------------------------------------------------


def _scale_section(record: Record, key: str, body: Callable[[Record], str]) -> str:
    if key not in record["values"]:
        phase = "single" if key in ("cycle", "size") else key
        return (f"**Not measured on this tree**: the recorded run skipped this phase (`--skip "
                f"{phase}`). It is measured by `python -m benchmarks.bench_scale --record "
                "docs/records/scale` without that `--skip`.")
    return body(record)


def scale_single(record: Record) -> str:
    def body(rec: Record) -> str:
        v, r = rec["values"], rec["ratios"]
        a = v["args"]
        c = v["cycle"]
        cycles = [("cold", c["cold"])] + [(f"warm {i + 1}", w) for i, w in enumerate(c["warm"])]
        rows = [[name, _num(x["partitions"]), _num(x["kafka_reads"]), _num(x["cache_hits"]),
                 str(x["read_failures"]), _num(x["cpu_s"]), f"{x['VmHWM']:.0f}"]
                for name, x in cycles]
        text = (f"One exporter, {_num(a['groups'])} groups × {a['partitions']} partitions "
                f"({a['lagging']:.0%} of the groups lagging), default settings:\n\n" + _table(
                    ["cycle", "partitions", "Kafka reads", "cache hits", "failed reads",
                     "exporter CPU s, all threads (at the load above)", "VmHWM MiB"], rows))
        if "scrape" in v and "baseline_over_cached_scrape" not in r:
            text += ("\n\n**Scrapes: not measured on this tree.** The recorded run had no "
                     "same-run baseline (`--baseline-rounds 0`), and scrape times alone are "
                     "not claimed here; `python -m benchmarks.bench_scale --skip clusters,shards "
                     "--record docs/records/scale` measures the cached exposition against "
                     "`generate_latest` at every scrape.")
        if "scrape" in v and "baseline_over_cached_scrape" in r:
            during = v.get("scrape_during_cycle", {})
            rows = [[mode, _num(v["scrape"][mode]["n"]), f"{v['scrape'][mode]['bytes'] / 1e6:.1f}",
                     _bold(_x(r['baseline_over_cached_scrape'][mode]['p50_s'], 0)),
                     _bold(_x(r['baseline_over_cached_scrape'][mode]['p99_s'], 0)),
                     _num(v["scrape"][mode]["p99_s"], 3),
                     _num(during[mode]["p99_s"], 3) if mode in during else "—"]
                    for mode in ("plain", "gzip")]
            unanswered = [mode for mode in ("plain", "gzip")
                          if not v.get("baseline_scrape", {}).get(mode, {}).get("n", 1)]
            if unanswered:
                text += (f"\n\nThe baseline answered none of its {', '.join(unanswered)} "
                         "scrapes (the connection closed before an answer): no ratio for "
                         "that mode.")
            text += (f"\n\n{a['scrapers']} concurrent scrapers against the cached exposition and, "
                     "in the same run, against prometheus_client's `generate_latest` at every "
                     "scrape (the baseline); the cached exposition's own p99 (to the last byte, "
                     "at the load above) between cycles and with 2 + 2 scrapers during a "
                     "cycle:\n\n" + _table(
                         ["scrape", "scrapes", "MB per scrape", "baseline ÷ cached, p50",
                          "baseline ÷ cached, p99", "cached p99 s", "cached p99 s during a cycle"],
                         rows))
        return text

    return _scale_section(record, "cycle", body)


def scale_series(record: Record) -> str:
    def body(rec: Record) -> str:
        size = rec["values"]["size"]
        n = size["partitions"]
        rows = []
        for name, label in (("served", "the default families"), ("every", "every family")):
            if name in size:
                x = size[name]
                rows.append([label, _num(x["series"]), f"{x['series'] / n:.2f}",
                             f"{x['bytes'] / 1e6:.1f}", f"{x['bytes'] / n:.0f}"])
        return (f"/metrics for {_num(n)} partitions in {_num(rec['values']['args']['groups'])} "
                "groups:\n\n" + _table(["families", "series", "series per partition",
                                         "MB (plain)", "bytes per partition"], rows))

    return _scale_section(record, "size", body)


def scale_clusters(record: Record) -> str:
    def body(rec: Record) -> str:
        c = rec["values"]["clusters"]
        rows = [["first cycle of every cluster: CPU s", _num(c["first_cycle"]["cpu_s"])],
                ["rounds of all clusters in the loops", _num(c["rounds"], 1)],
                ["fast clusters' cycles: p50, max (ms)",
                 f"{_num(c['fast_p50_ms'], 0)}, {_num(c['fast_max_ms'], 0)}"],
                ["the slow cluster's cycles (ms)",
                 ", ".join(_num(d, 0) for d in c["slow_durations_ms"]) or "—"],
                ["CPU s per round of all clusters",
                 _num(c["cpu_s"] / c["rounds"]) if c["rounds"] else "—"]]
        rows += [[f"scrape {mode}: n, p50 s, p99 s",
                  f"{x['n']}, {_num(x['p50_s'], 3)}, {_num(x['p99_s'], 3)}"]
                 for mode, x in c["scrape"].items()]
        rows.append(["VmHWM MiB", f"{c['hwm_mb']:.0f}"])
        return (f"{c['clusters']} clusters, {_num(c['partitions'])} partitions in one process, "
                f"one cluster's Burrow answering every `/lag` after {c['slow_ms_per_lag']:.0f} ms, "
                f"{c['seconds']:.0f} s of every cluster's loop while 2 + 2 scrapers scrape "
                "(absolute figures at the load above, not claims: no baseline ran in the same "
                "run):\n\n"
                + _table(["measured", "this run"], rows))

    return _scale_section(record, "clusters", body)


def scale_shards(record: Record) -> str:
    def body(rec: Record) -> str:
        s = rec["values"]["shards"]
        rows = [[str(i), _num(c["partitions"]), "yes" if c["up"] else "**no**",
                 f"{p['bytes'] / 1e6:.1f}", f"{p['hwm_mb']:.0f}"]
                for i, (c, p) in enumerate(zip(s["cycles"], s["per_shard"], strict=True))]
        return (f"{_num(s['partitions'])} partitions over {s['shards']} exporter processes, "
                f"shard i of {s['shards']} each, one cycle each in parallel. The union of their "
                f"/metrics: {_num(s['series'])} `{FRESHNESS.name}` series, "
                f"{s['missing']} missing, {s['extra']} extra, {s['duplicated']} twice; "
                f"{_num(s['groups'])} of {_num(s['groups_expected'])} group roll-ups, "
                f"{s['groups_duplicated']} twice.\n\n"
                + _table(["shard", "partitions", "up", "/metrics MB", "VmHWM MiB"], rows))

    return _scale_section(record, "shards", body)


def scale_sizes(record: Record) -> str:
    v = record["values"]
    if "sizes" not in v:
        return ("**Not measured on this tree**: the recorded run has no sizes phase. It is "
                "measured by `python -m benchmarks.bench_scale --before DIR --before-name "
                "<commit> --record docs/records/scale` without `--skip sizes`.")
    name = v["args"].get("before_name") or "the `--before` tree"
    ratios = record["ratios"].get("sizes_before_over_after_cpu", {})
    rows = []
    for n, run in sorted(v["sizes"].items(), key=lambda kv: int(kv[0])):
        after = [("cold", run["after"]["cold"])] + [
            (f"warm {i + 1}", w) for i, w in enumerate(run["after"]["warm"])]
        before = [run["before"]["cold"], *run["before"]["warm"]] if "before" in run else []
        for i, (kind, a) in enumerate(after):
            b = before[i] if i < len(before) else None
            rows.append([_num(int(n)), kind, _num(a["cpu_s"]), _num(a["wall_s"]),
                         _num(b["cpu_s"]) if b else "—",
                         _x(b["cpu_s"] / a["cpu_s"], 2) if b else "—"])
    text = (f"One exporter on the generated Burrow, {v['args']['lagging']:.0%} of the groups "
            f"lagging, default settings; this tree's cycles alternating with {name}'s "
            "(`--before`), both processes alive, one cycle at a time:\n\n" + _table(
                ["partitions", "cycle", "CPU s, this tree", "wall s, this tree",
                 f"CPU s, {name}", f"CPU {name} ÷ this tree"], rows))
    if ratios:
        by_size = sorted(ratios.items(), key=lambda kv: int(kv[0]))
        text += f"\n\nSame run, CPU {name} ÷ this tree: " + "; ".join(
            f"{_num(int(n))} partitions **{_x(r['warm'], 2)}** warm (median), "
            f"{_x(r['cold'], 2)} cold" for n, r in by_size) + "."
    return text + "\n\n" + scale_sizing(v.get("sizing") or {})


def scale_sizing(s: Record) -> str:
    """The replica size the measured CPU per partition gives against the budget; a linear
    extrapolation, so never above the largest size measured."""
    if not s:
        return "No sizing: the sizes phase measured no cycle."
    budget = s["budget_cores"] * s["frequency_s"]
    size = min(s["per_replica_cold"], s["partitions"])
    return (
        f"**Sizing.** Budget: {_num(s['budget_cores'])} of a core at one cycle every "
        f"{_num(s['frequency_s'], 0)} s, {_num(budget, 1)} CPU s per cycle. At "
        f"{_num(s['partitions'])} partitions a cold cycle (every lagging partition read from "
        f"Kafka: what a cycle costs when every lagging group has committed since the last one) "
        f"took {_num(s['cpu_s_cold'])} CPU s, **{s['budget_share_cold']:.1%} of the budget**, "
        f"and a warm one (the timestamp cache answers) {_num(s['cpu_s_warm'])} CPU s, "
        f"{s['budget_share_warm']:.1%}. CPU per partition scaled linearly, the budget would "
        f"hold {_num(s['per_replica_cold'])} partitions per replica (cold cycles) or "
        f"{_num(s['per_replica_warm'])} (warm), but nothing above {_num(s['partitions'])} was "
        f"measured on one replica, so: **{_num(size)} partitions per replica, "
        f"N = ceil(partitions ÷ {_num(size)})**.")


def _burrow_settings(s: Record | None) -> str:
    if not s:
        return "its settings not recorded"
    return (f"which refreshes topics every {s['topic_refresh_s']} s and broker offsets every "
            f"{s['offset_refresh_s']} s ({s['storage']} storage, {s['storage_workers']} "
            f"workers, {s['intervals']} intervals; evaluations cached "
            f"{s['evaluator_expire_cache_s']} s)")


def scale_real_burrow(record: Record) -> str:
    v, r = record["values"], record["ratios"]["burrow_over_exporter_cpu"]
    a = v["args"]
    idle = v["burrow_idle"]
    rate = idle["cpu_s"] / idle["seconds"]
    lst = v["listing"]
    burrow = record.get("versions", {}).get("burrow", "Burrow")
    cycles = [(("cold" if i == 0 else f"warm {i}"), c) for i, c in enumerate(v["cycles"])]
    cycles.append(("during scrapes", v["scrape_during_cycle"]["cycle"]))
    rows = [[name, _num(c["partitions"]), _num(c["kafka_reads"]), _num(c["cpu_s"]),
             _num(c["wall_s"]), _num(c["burrow_cpu_s"]),
             _num(max(c["burrow_cpu_s"] - rate * c["wall_s"], 0.0)),
             _x(c["burrow_cpu_s"] / c["cpu_s"], 2)] for name, c in cycles]
    total = a["groups"] * a["partitions"]
    text = (
        f"{_num(a['groups'])} groups × {a['partitions']} partitions ({_num(total)} partitions) "
        f"on {a['topics']} topics, {a['lagging']:.0%} of the groups lagging, real group "
        f"commits read by {burrow}, {_burrow_settings(v.get('burrow_settings'))}; one "
        f"exporter, default settings. Burrow listed every group "
        f"**{_num(lst['listed_after_first_commit_s'], 1)} s** after the first commit "
        f"({_num(lst['commit_s'], 1)} s of commits; {_num(lst['listed_after_last_commit_s'], 1)} "
        f"s after the last), at {_num(lst['burrow_cpu_s'])} CPU s of its own. Idle, Burrow "
        f"used {_num(rate, 3)} of a core (its own refreshes), subtracted in the column "
        "\"above idle\".\n\n" + _table(
            ["cycle", "partitions", "Kafka reads", "exporter CPU s", "wall s",
             "Burrow CPU s, same window", "Burrow CPU s above idle", "Burrow ÷ exporter CPU"],
            rows))
    text += (f"\n\nSame run, Burrow's CPU ÷ the exporter's over a cycle: **{_x(r['warm'], 2)}** "
             f"warm (median), {_x(r['cold'], 2)} cold.")
    srows = []
    for mode in ("plain", "gzip"):
        idle_s, during = v["scrape"][mode], v["scrape_during_cycle"][mode]
        srows.append([mode, f"{_num(idle_s['bytes'] / 1e6, 1)}",
                      f"{idle_s['n']}, {_num(idle_s['p50_s'], 3)}, {_num(idle_s['p99_s'], 3)}",
                      f"{during['n']}, {_num(during['p50_s'], 3)}, {_num(during['p99_s'], 3)}"])
    text += (f"\n\nScrapes (latency to the last byte, absolute at the load above): "
             f"{a['scrapers']} scrapers × {a['rounds']} rounds between cycles, and 2 + 2 "
             "scrapers back to back during a cycle:\n\n" + _table(
                 ["scrape", "MB", "between cycles: n, p50 s, p99 s",
                  "during a cycle: n, p50 s, p99 s"], srows))
    text += (f"\n\nVmHWM: exporter {v['hwm_mb']:.0f} MiB, Burrow {v['burrow_hwm_mb']:.0f} MiB"
             + (" (**Burrow restarted during the run**: its CPU figures are not whole)"
                if v["burrow_restarted"] else "") + ".")
    return text


# --- spark: bench_compact, bench_spark, bench_report -------------------------------------------


def compact(record: Record) -> str:
    v, r = record["values"], record["ratios"]
    return (f"{v['days']} days of 30 s cycles, {_num(v['files_written'])} cycle files with "
            f"{_num(v['rows'])} rows, became {v['partitions_compacted']} files. Same data, same "
            "run, small files ÷ compacted: reading the table with pyarrow "
            f"**{_x(r['read_ratio'])}**, the Spark report on `{v['master']}` "
            f"**{_x(r['report_ratio'])}** (best of the repetitions each).")


def spark_lookups(record: Record) -> str:
    v = record["values"]
    if "lookups" not in v:
        return "This run skipped the lookups (`--skip-lookups`)."
    lk, r = v["lookups"], record["ratios"]["lookups_spark_over_threadpool"]
    return (f"{_num(lk['lookups'])} reads on {_num(lk['partitions'])} partitions of Kafka "
            f"{lk['kafka_version']}, added RTT {lk['rtt_ms']:g} ms, one plan, on `{v['master']}`: "
            f"Spark tasks ({lk['spark_tasks']} tasks, {lk['spark_python_workers']} Python "
            f"workers) took **{_x(r['warm'])}** the thread-pool engine's time warm and "
            f"{_x(r['cold'])} cold, in the same run.")


def spark_report(record: Record) -> str:
    v, r = record["values"], record["ratios"]
    rows = [[label, f"**{_x(r[key], 2)}**" if key in r else "—"]
            for key, label in (("spark_over_duckdb_slo", "query only (warm, best of the reps)"),
                               ("spark_over_duckdb_slo_end_to_end",
                                "end to end (session start + first query)"),
                               ("spark_over_duckdb_slo_cpu", "CPU seconds"))]  # fmt: skip
    return (f"The report's tables over {_num(v['rows'])} generated history rows, Spark on "
            "`local[2]` against the DuckDB + `domain.slo` reference, asserted equal cell for "
            "cell; Spark ÷ reference in the same run:\n\n" + _table(["measured", "ratio"], rows))


# --- pages ---------------------------------------------------------------------------------------


def _cmd(bench: str, page: str, extra: str = "") -> str:
    return (f"`.venv/bin/python -m benchmarks.{bench}{extra} --record docs/records/{page}`, "
            "then `.venv/bin/python scripts/render_docs.py`.")


#: page → [(block name, record under docs/records, how to record it, figures)]
PAGES: dict[str, list[tuple[str, str, str, Block]]] = {
    PERFORMANCE: [
        ("performance-cycle", "performance/bench_cycle.json",
         _cmd("bench_cycle", "performance", " --compare-prop fetch.wait.max.ms=10"), cycle_ratios),
        ("performance-fetch", "performance/bench_cycle.json",
         _cmd("bench_cycle", "performance"), cycle_fetches),
        ("performance-compare", "performance/bench_cycle.json",
         _cmd("bench_cycle", "performance", " --compare-prop fetch.wait.max.ms=10"),
         cycle_compare),
        ("performance-rss", "performance/bench_cycle.json",
         _cmd("bench_cycle", "performance"), cycle_rss),
        ("performance-caught-up", "performance/bench_caught_up.json",
         _cmd("bench_caught_up", "performance"), caught_up),
    ],
    SCALE: [
        ("scale-single", "scale/bench_scale.json", _cmd("bench_scale", "scale"), scale_single),
        ("scale-series", "scale/bench_scale.json", _cmd("bench_scale", "scale"), scale_series),
        ("scale-clusters", "scale/bench_scale.json", _cmd("bench_scale", "scale"),
         scale_clusters),
        ("scale-shards", "scale/bench_scale.json", _cmd("bench_scale", "scale"), scale_shards),
        ("scale-sizes", "scale/bench_scale.json",
         _cmd("bench_scale", "scale", " --before DIR --before-name <commit>"), scale_sizes),
        ("scale-real-burrow", "scale/bench_scale_burrow.json", _cmd("bench_scale_burrow", "scale"),
         scale_real_burrow),
    ],
    SPARK: [
        ("spark-compact", "spark/bench_compact.json", _cmd("bench_compact", "spark"), compact),
        ("spark-lookups", "spark/bench_spark.json", _cmd("bench_spark", "spark"),
         spark_lookups),
        ("spark-report", "spark/bench_report.json", _cmd("bench_report", "spark"), spark_report),
    ],
}


def pages(root: Path) -> dict[str, str]:
    """Every page of this module with its blocks filled from the records under `root`."""
    out = {}
    for page, blocks in PAGES.items():
        text = read_page(root, page)
        seen: set[str] = set()
        for name, relative, how, body in blocks:
            block = _block(root, relative, how, body, first=relative not in seen)
            seen.add(relative)
            text = replace_block(text, name, block, where=page)
        out[page] = text
    return out
