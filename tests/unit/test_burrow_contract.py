"""The client against what real Burrows answered (tests/data/burrow/<version>/, recorded by
tests/data/burrow/record.py from the dev stack), replayed through `responses`: every endpoint the
client calls, the group shapes a cycle meets (lagging, caught up, committed on some partitions
only, committed below the log start, held by a live member) and the 404s of a vanished group and
an unknown cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.errors import BurrowNotFound
from tests.data.burrow import record

DATA = Path(record.__file__).parent
VERSIONS = sorted(p.name for p in DATA.iterdir() if p.is_dir() and (p / "clusters.json").exists())
BASE = "http://burrow.test:8000"
CLUSTER = "local"


def answers(version: str) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in (DATA / version).glob("*.json")}


@pytest.fixture(params=VERSIONS)
def burrow(request: pytest.FixtureRequest) -> Iterator[tuple[str, BurrowClient]]:
    """A client whose every request is answered from the version's recording (a request for
    anything not recorded fails the test)."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for answer in answers(request.param).values():
            mock.add(responses.GET, BASE + answer["path"], body=answer["body"],
                     status=answer["status"], content_type=answer["content_type"] or None)
        client = BurrowClient(BurrowSettings(url=BASE, retries=0))
        try:
            yield request.param, client
        finally:
            client.close()


def test_the_recording_holds_every_endpoint_the_client_calls() -> None:
    assert "1.2.1" in VERSIONS
    for version in VERSIONS:
        recorded = answers(version)
        assert set(recorded) == set(record.paths(CLUSTER)), version
        assert recorded["vanished-group_lag"]["status"] == 404
        assert recorded["unknown_cluster"]["status"] == 404


def test_health_clusters_servers_and_consumers(burrow: tuple[str, BurrowClient]) -> None:
    _, client = burrow
    assert client.health() is None
    assert client.clusters() == [CLUSTER]
    assert client.cluster_servers(CLUSTER)
    assert set(record.GROUPS) <= set(client.consumers(CLUSTER))
    with pytest.raises(BurrowNotFound):
        client.cluster_servers("no-such-cluster")


def test_every_group_shape_is_read(burrow: tuple[str, BurrowClient]) -> None:
    version, client = burrow
    lags = client.cluster_lags(CLUSTER, [*record.GROUPS, record.VANISHED])
    assert lags.missing_groups == (record.VANISHED,)
    assert not lags.failed_groups and not lags.rejected
    groups = {g.consumer: g for g in lags.groups}
    assert set(groups) == set(record.GROUPS)
    for group in groups.values():
        assert sorted(p.key.partition for p in group.partitions) == list(
            range(record.PARTITIONS)), (version, group.consumer)
        assert not group.rejected and group.unusable_partitions == 0

    def by_partition(name: str) -> dict[int, Any]:
        return {p.key.partition: p for p in groups[name].partitions}

    for p in by_partition(record.LAGGING).values():  # the second commit, 5 behind the end
        assert (p.committed_offset, p.current_lag) == (record.RECORDS - 5, 5)
        assert p.log_end_offset == record.RECORDS and p.commit_time_ms is not None
    for p in by_partition(record.CAUGHT_UP).values():
        assert (p.committed_offset, p.current_lag) == (record.RECORDS, 0)
    partial = by_partition(record.PARTIAL)
    assert partial[0].committed_offset == record.RECORDS - 3
    for p in (partial[1], partial[2]):  # no commit: `end: null`, never a made-up offset
        assert p.committed_offset is None and p.commit_time_ms is None
    for p in by_partition(record.LOST).values():  # below the log start: Burrow's lag as it is
        assert (p.committed_offset, p.current_lag) == (2, record.RECORDS - 2)
    member = [p for p in groups[record.MEMBER].partitions if p.committed_offset is not None]
    assert member, "the live member committed"
    if version != "1.2.1":  # 1.2.1 never knows the member against Kafka >= 2.1
        assert {p.client_id for p in groups[record.MEMBER].partitions} == {"recorded-client"}
        assert all(p.owner for p in groups[record.MEMBER].partitions)
