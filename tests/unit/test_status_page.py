"""The status page at `/`: worst first, drill-down, every name escaped."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain import model as m
from freshness_tracker.sinks.status_page import GROUP_ROWS, render_status_page

NOW = 1_800_000_000_000


class _Cells(HTMLParser):
    """Rows of text cells per table, and every link, as a browser would see them; `alignment`:
    the same cells as (tag, right-aligned), as the page's CSS aligns them."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.alignment: list[list[list[tuple[str, bool]]]] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
            self.alignment.append([])
        elif tag == "tr":
            self.tables[-1].append([])
            self.alignment[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
            classes = (dict(attrs).get("class") or "").split()
            self.alignment[-1][-1].append((tag, "n" in classes))
        elif tag == "a":
            self.links.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _parse(page: bytes) -> _Cells:
    parser = _Cells()
    parser.feed(page.decode())
    return parser


def _group(consumer: str, freshness: int | None, loss: int = 0, unmeasured: int = 0,
           cluster: str = "east") -> m.GroupResult:
    return m.GroupResult(cluster, consumer, "OK", freshness, 10, 2, unmeasured, loss)


def _partition(consumer: str, topic: str, p: int, freshness: int | None,
               status: m.PartitionStatus = m.PartitionStatus.OK) -> m.PartitionResult:
    return m.PartitionResult(m.PartitionKey("east", consumer, topic, p), status, "OK", 100, 105,
                             5, NOW - 60_000, NOW - (freshness or 0), freshness, 2_000,
                             lost_records=7 if status is m.PartitionStatus.DATA_LOSS else 0)


def _snapshot(groups: list[m.GroupResult], partitions: tuple[m.PartitionResult, ...] = (),
              up: bool = True) -> m.Snapshot:
    health = m.ClusterHealth("east", up, NOW - 5_000, NOW - 5_000 if up else NOW - 600_000,
                             1_200, groups=len(groups),
                             error=None if up else "Burrow unreachable")
    return m.Snapshot((m.ClusterSnapshot("east", 1, NOW - 6_000, NOW - 5_000, health,
                                         partitions, (), tuple(groups)),))


def test_groups_are_listed_worst_first_with_data_loss_on_top() -> None:
    page = _parse(render_status_page(_snapshot([
        _group("fresh", 0), _group("stuck", 3_600_000), _group("slow", 90_000),
        _group("lossy", 1_000, loss=1), _group("unknown", None, unmeasured=2)]), NOW))
    groups = page.tables[1][1:]
    assert [row[1] for row in groups] == ["lossy", "stuck", "slow", "unknown", "fresh"]
    assert groups[1][2] == "1h 0m" and groups[0][2] == "≥1.0s"
    assert groups[3][2] == "-" and groups[3][6] == "2"
    clusters = page.tables[0][1:]
    assert clusters == [["east", "up", "5.0s ago", "1.2s", "5", "0", ""]]
    assert {"/metrics", "/healthz"} <= set(page.links)


def test_a_down_cluster_says_why_and_since_when() -> None:
    page = _parse(render_status_page(_snapshot([], up=False), NOW))
    assert page.tables[0][1] == ["east", "down", "10m 0s ago", "1.2s", "0", "0",
                                 "Burrow unreachable"]
    assert "No consumer group measured yet." in "".join(page.text)


def test_drill_down_shows_the_groups_partitions_worst_first() -> None:
    parts = (_partition("stuck", "orders", 0, 5_000), _partition("stuck", "orders", 1, 65_000),
             _partition("stuck", "audit", 0, 100, m.PartitionStatus.DATA_LOSS),
             _partition("other", "orders", 0, 999_999))
    snap = _snapshot([_group("stuck", 65_000, loss=1), _group("other", 999_999)], parts)
    overview = _parse(render_status_page(snap, NOW))
    link = next(href for href in overview.links if "group=stuck" in href)
    assert link == "/?cluster=east&group=stuck"
    page = _parse(render_status_page(snap, NOW, {"cluster": "east", "group": "stuck"}))
    rows = page.tables[0][1:]
    assert [(r[0], r[1], r[4]) for r in rows] == [
        ("orders", "1", "1m 5s"), ("orders", "0", "5.0s"), ("audit", "0", "≥100ms")]
    assert rows[2][-1] == "7 lost"
    # what went wrong measuring a partition, under its own name; ok says nothing, so it is
    # never read as Burrow's status beside it
    assert page.tables[0][0][7:9] == ["measurement", "Burrow status"]
    assert [(r[7], r[8]) for r in rows] == [("", "OK"), ("", "OK"), ("data_loss", "OK")]


def test_an_unknown_group_is_said_not_an_error() -> None:
    page = _parse(render_status_page(_snapshot([]), NOW, {"cluster": "east", "group": "gone"}))
    assert "No group gone in cluster east" in "".join(page.text)
    assert "/" in page.links


def test_a_huge_fleet_lists_the_worst_and_counts_the_rest() -> None:
    groups = [_group(f"g{i}", i) for i in range(GROUP_ROWS + 7)]
    page = _parse(render_status_page(_snapshot(groups), NOW))
    rows = page.tables[1][1:]
    assert len(rows) == GROUP_ROWS and rows[0][1] == f"g{GROUP_ROWS + 6}"
    assert "7 more groups" in "".join(page.text)


def test_the_page_refreshes_itself_and_loads_nothing_from_elsewhere() -> None:
    page = render_status_page(_snapshot([_group("a", 1)]), NOW, refresh_s=15).decode()
    assert '<meta http-equiv="refresh" content="15">' in page
    assert "<script" not in page and "http://" not in page and "https://" not in page


@given(name=st.text(min_size=1, max_size=40), topic=st.text(min_size=1, max_size=40))
def test_any_name_is_shown_as_text_never_as_markup(name: str, topic: str) -> None:
    snap = _snapshot([_group(name, 5_000)], (_partition(name, topic, 0, 5_000),))
    overview = _parse(render_status_page(snap, NOW))
    assert overview.tables[1][1][1] == name
    assert len(overview.tables) == 2 and len(overview.tables[1]) == 2
    drill = _parse(render_status_page(snap, NOW, {"cluster": "east", "group": name}))
    assert drill.tables[0][1][0] == topic


def test_a_numeric_column_is_right_aligned_header_and_cells_alike() -> None:
    parts = (_partition("stuck", "orders", 0, 5_000),
             _partition("stuck", "audit", 0, 100, m.PartitionStatus.DATA_LOSS))
    snap = _snapshot([_group("stuck", 5_000, loss=1), _group("fresh", 0)], parts)
    pages = (render_status_page(snap, NOW),
             render_status_page(snap, NOW, {"cluster": "east", "group": "stuck"}))
    tables = [table for page in pages for table in _parse(page).alignment]
    assert len(tables) == 3  # clusters, groups; the group's partitions
    for header, *rows in tables:
        assert rows and all(tag == "th" for tag, _ in header)
        for column, (_, header_right) in enumerate(header):
            cells = {right for row in rows for tag, right in [row[column]] if tag == "td"}
            assert cells == {header_right}, (column, header, rows)
    assert [right for _, right in tables[1][0]] == [False, False, True, True, False, True, True]


@pytest.mark.parametrize(("ms", "text"), [
    (None, "-"), (0, "0ms"), (999, "999ms"), (1_000, "1.0s"), (59_949, "59.9s"),
    (60_000, "1m 0s"), (65_000, "1m 5s"), (3_599_999, "59m 59s"), (3_600_000, "1h 0m"),
    (86_399_000, "23h 59m"), (86_400_000, "1d 0h"), (604_775_000, "6d 23h"),
    (604_800_000, "7d 0h"), (100 * 86_400_000 + 5 * 3_600_000, "100d 5h"),
])  # fmt: skip
def test_durations_read_in_their_two_largest_units(ms: int | None, text: str) -> None:
    """A week-old group reads "7d 0h", not "167h59m35s"."""
    snap = _snapshot([_group("g", ms)])
    assert _parse(render_status_page(snap, NOW)).tables[1][1][2] == text


def test_counts_are_pluralised() -> None:
    one = "".join(_parse(render_status_page(_snapshot([_group("g", 0)]), NOW)).text)
    assert "1 consumer group, 0 with unconsumed data; 1 cluster, 0 down." in one
    two = "".join(_parse(render_status_page(_snapshot([_group("g", 0), _group("h", 5)]),
                                            NOW)).text)
    assert "2 consumer groups, 1 with unconsumed data; 1 cluster, 0 down." in two


def test_freshness_is_as_of_the_request_so_a_stuck_group_grows_between_cycles() -> None:
    """The same snapshot rendered 90 s later, after a cycle that saw the same records waiting:
    the lagging group's oldest uncommitted record (and each lagging partition's) is 90 s older,
    a caught-up group still 0, an unknown one still unknown, and a data-loss partition's lower
    bound ages too."""
    parts = (_partition("stuck", "orders", 0, 5_000), _partition("stuck", "orders", 1, 0,
                                                                 m.PartitionStatus.CAUGHT_UP),
             _partition("stuck", "audit", 0, 100, m.PartitionStatus.DATA_LOSS))
    parts = (parts[0], parts[1]._replace(record_timestamp_ms=None), parts[2])
    stuck = replace(_group("stuck", 5_000, loss=1), oldest_uncommitted_ms=NOW - 5_000)
    snap = _snapshot([stuck, _group("fresh", 0), _group("unknown", None, unmeasured=1),
                      _group("slow", 60_000)], parts)
    # the cycle before saw the same records waiting, each younger by the time between them
    before = _snapshot([replace(stuck, max_freshness_ms=2_000)],
                       (parts[0]._replace(freshness_ms=2_000), parts[1],
                        parts[2]._replace(freshness_ms=50)))
    at_cycle = _parse(render_status_page(snap, NOW, previous=before)).tables[1][1:]
    later = _parse(render_status_page(snap, NOW + 90_000, previous=before)).tables[1][1:]
    assert [(r[1], r[2]) for r in at_cycle] == [
        ("stuck", "≥5.0s"), ("slow", "1m 0s"), ("unknown", "-"), ("fresh", "0ms")]
    # "slow" has no timestamp in this snapshot (an exporter that read none): its cycle's value
    assert [(r[1], r[2]) for r in later] == [
        ("stuck", "≥1m 35s"), ("slow", "1m 0s"), ("unknown", "-"), ("fresh", "0ms")]
    drill = _parse(render_status_page(snap, NOW + 90_000, {"cluster": "east", "group": "stuck"},
                                      previous=before))
    assert [(r[0], r[1], r[4]) for r in drill.tables[0][1:]] == [
        ("orders", "0", "1m 35s"), ("audit", "0", "≥1m 30s"), ("orders", "1", "0ms")]
    assert "1m 35s" in "".join(drill.text)  # the group's max in the summary line


def test_a_record_ahead_of_the_clock_is_0_old_never_negative() -> None:
    ahead = _partition("g", "t", 0, 0)._replace(record_timestamp_ms=NOW + 30_000)
    group = replace(_group("g", 0), oldest_uncommitted_ms=NOW + 30_000)
    snap = _snapshot([group], (ahead,))
    assert _parse(render_status_page(snap, NOW)).tables[1][1][2] == "0ms"
    # its freshness has not grown since the cycle before: 0 until a cycle sees it age (as the
    # query-time rule, which carries the gauge at the rate it grew)
    drill = _parse(render_status_page(snap, NOW + 40_000, {"cluster": "east", "group": "g"},
                                      previous=snap))
    assert drill.tables[0][1][4] == "0ms"


def _lagging(consumer: str, cycle_freshness: int, stamp: int) -> m.GroupResult:
    """A lagging group whose cycle (finished at NOW - 5 s) found its oldest uncommitted record
    appended at `stamp`, `cycle_freshness` old then."""
    return replace(_group(consumer, cycle_freshness), oldest_uncommitted_ms=stamp)


def test_a_stuck_group_ages_and_one_that_keeps_up_shows_its_cycle() -> None:
    # both groups were 30 s behind at their cycle; "stuck" waits on the record the previous
    # cycle saw (its freshness grew 1 s per s between them), "moving" committed past it (its
    # freshness stayed at 30 s): as the query-time rule, the first is carried forward with the
    # clock, the second keeps its cycle's value
    cycle = NOW - 5_000
    current = _snapshot([_lagging("stuck", 30_000, cycle - 30_000),
                         _lagging("moving", 30_000, cycle - 30_000)])
    previous = _snapshot([_lagging("stuck", 25_000, cycle - 30_000),
                          _lagging("moving", 30_000, cycle - 35_000)])
    rows = {r[1]: r[2] for r in _parse(render_status_page(
        current, NOW, previous=previous)).tables[1][1:]}
    assert rows == {"stuck": "35.0s", "moving": "30.0s"}
    # falling behind at half the clock's pace: carried forward at that pace
    previous = _snapshot([_lagging("stuck", 20_000, cycle - 40_000)])
    rows = {r[1]: r[2] for r in _parse(render_status_page(
        current, NOW + 5_000, previous=previous)).tables[1][1:]}
    assert rows["stuck"] == "35.0s"
    # a group the previous cycle did not list has no rate yet: its cycle's value (as the rule,
    # whose window then holds one sample)
    rows = {r[1]: r[2] for r in _parse(render_status_page(
        current, NOW, previous=_snapshot([]))).tables[1][1:]}
    assert rows == {"stuck": "30.0s", "moving": "30.0s"}


def test_a_partition_whose_record_changed_shows_its_cycle_value() -> None:
    waiting, passed = _partition("g", "t", 0, 20_000), _partition("g", "t", 1, 20_000)
    before = (waiting._replace(freshness_ms=15_000),
              passed._replace(record_timestamp_ms=(passed.record_timestamp_ms or 0) - 9_000))
    page = _parse(render_status_page(
        _snapshot([_group("g", 20_000)], (waiting, passed)), NOW + 4_000,
        {"cluster": "east", "group": "g"}, previous=_snapshot([_group("g", 15_000)], before)))
    assert [(r[1], r[4]) for r in page.tables[0][1:]] == [("0", "24.0s"), ("1", "20.0s")]


def test_the_holder_keeps_each_clusters_cycle_before_its_current_one() -> None:
    from freshness_tracker.publish import SnapshotHolder

    holder = SnapshotHolder()
    (first,) = _snapshot([_group("g", 1)]).clusters
    (west,) = _snapshot([_group("w", 1, cluster="west")]).clusters
    west = replace(west, cluster="west")
    holder.publish(first)
    holder.publish(west)
    assert holder.previous.clusters == ()  # nothing was replaced yet
    second = replace(first, cycle_id=2)
    holder.publish(second)
    assert holder.previous.clusters == (first,)
    assert holder.current.clusters == (second, west)
