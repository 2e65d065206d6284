"""An outside attacker's round against the Burrow client: each test is an attack that broke
"never wedge" or "secrets never print" on an earlier client, kept as a regression test.

Slow name resolution is simulated by patching `socket.getaddrinfo` after the local server is up.
A lookup that never returns is not the client's to bound (nothing interrupts getaddrinfo): the
cycle runs on a thread the exporter stops waiting for at its deadline, which
tests/faults/test_deadlines.py holds to for a Burrow call that never returns.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from freshness_tracker.burrow import client as client_module
from freshness_tracker.burrow import parse
from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.deadline import Deadline, cycle_deadline
from freshness_tracker.errors import BurrowUnavailable
from tests.support.fake_burrow import ANY, Fault, FaultyBurrow
from tests.support.http_burrow import RecordingBurrow, ok

NAMES = [f"cluster-{i}" for i in range(50)]  # a ~700-byte body: ~35 s when dripped at 0.05 s
LAG = {"error": False, "status": {"status": "OK", "totallag": 0, "partitions": []}}

_real_getaddrinfo = socket.getaddrinfo


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Name lookups take `delay` seconds, or hang until `release` is set (at most 20 s)."""
    state: dict[str, Any] = {"delay": None, "release": threading.Event()}

    def lookup(*args: Any, **kwargs: Any) -> Any:
        if state["delay"] is not None:
            time.sleep(state["delay"])
        else:
            state["release"].wait(20)
        return _real_getaddrinfo(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    yield state
    state["release"].set()


def test_a_deadline_that_strikes_during_name_resolution_still_cuts_the_request(
    resolver: dict[str, Any],
) -> None:
    """Expected: burrow.timeout (1 s) bounds the whole call, whatever the server does.
    Was: a deadline that passed while getaddrinfo ran (1.5 s) was forgotten; the connection was
    then made with a *per-read* timeout of 1 s, so a body dripped every 0.05 s was read for as
    long as the server dripped (~35 s here, forever for a slow-loris)."""
    server = FaultyBurrow(None).start()
    server.serve_static("/v3/kafka", {"error": False, "clusters": NAMES, "request": {}})
    server.add(ANY, Fault.drip(0.05))
    burrow = BurrowClient(BurrowSettings(url=server.url, timeout_s=1.0, retries=0))
    resolver["delay"] = 1.5
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            burrow.clusters()
        except Exception as exc:  # recorded for the assertion
            outcome["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(6.0)
    elapsed = time.monotonic() - started
    try:
        assert not thread.is_alive(), (
            f"clusters() still running {elapsed:.1f} s into a call bounded by burrow.timeout=1s"
        )
        assert isinstance(outcome.get("error"), BurrowUnavailable)
    finally:
        server.stop()  # ends the drip, so the wedged call (if any) returns
        thread.join(10)
        burrow.close()


def test_cluster_lags_waits_its_join_slack_once_not_once_per_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REGRESSION ONLY: fails on df3926e (5.5 s), passes on 57c71f3 (1.0 s), which waits once.
    Expected (docstring of _JOIN_SLACK_S): cluster_lags() returns at most _JOIN_SLACK_S
    past the cycle deadline. The defect: each future got `remaining + slack`, so once the
    deadline had passed every group still queued behind a stuck worker (a slow parse of a
    16 MB body; a hung DNS lookup) cost another full slack: deadline + N x slack."""
    monkeypatch.setattr(client_module, "_JOIN_SLACK_S", 0.5)
    release = threading.Event()
    real_parse = parse.parse_group_lag

    def stuck_parse(*args: Any, **kwargs: Any) -> Any:
        release.wait(20)
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(parse, "parse_group_lag", stuck_parse)
    with RecordingBurrow() as server:
        for i in range(10):
            server.route(f"/v3/kafka/local/consumer/g{i}/lag", ok(LAG))
        burrow = BurrowClient(
            BurrowSettings(url=server.url, timeout_s=1.0, retries=0, concurrency=1)
        )
        started = time.monotonic()
        try:
            with cycle_deadline(Deadline.after(0.5)):
                lags = burrow.cluster_lags("local", [f"g{i}" for i in range(10)])
            elapsed = time.monotonic() - started
            assert len(lags.failed_groups) == 10
            # deadline + one slack, plus room for a loaded machine: a slack per queued group
            # (10 x 0.5 s) is far beyond it
            assert elapsed < 0.5 + 0.5 + 2.0, (
                f"cluster_lags() took {elapsed:.1f} s: deadline 0.5 s + slack 0.5 s expected"
            )
        finally:
            release.set()
            burrow.close()


#: The stalled-handshake test's burrow.timeout: long enough that half of it is slack on a
#: loaded machine.
LIMIT_S = 2.0


def test_a_stalled_tls_handshake_is_cut_at_the_deadline() -> None:
    """Expected: a server that accepts the connection and never answers the TLS handshake costs
    burrow.timeout, not forever. Was: wrap_socket() detached the plain socket the old client's
    reaper held, so the handshake was bounded only by a timeout that started after the name
    lookup."""
    listener = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    try:
        port = listener.getsockname()[1]
        burrow = BurrowClient(
            BurrowSettings(
                url=f"https://127.0.0.1:{port}", timeout_s=LIMIT_S, retries=0, tls_verify=False
            )
        )
        started = time.monotonic()
        try:
            with pytest.raises(BurrowUnavailable):
                burrow.clusters()
            elapsed = time.monotonic() - started
            assert elapsed < 1.5 * LIMIT_S, \
                f"a {LIMIT_S:g} s request took {elapsed:.2f} s (TLS handshake not cut)"
        finally:
            burrow.close()
    finally:
        listener.close()


def test_a_password_in_the_url_is_not_in_the_settings_repr() -> None:
    """Expected: `password` is repr=False, so repr(settings) never shows a secret. Was: the
    client accepts `https://user:password@burrow` in BurrowSettings.url (and strips it for its
    own messages), but repr(settings) / repr(client.settings) prints the URL with the password.
    (Config-built settings are stripped by config.settings._burrow; direct construction, e.g.
    the Spark job's callers and tests, is not.)"""
    settings = BurrowSettings(url="http://user:S3cretPw@127.0.0.1:1")
    burrow = BurrowClient(settings)
    try:
        assert "S3cretPw" not in burrow.url
        assert "S3cretPw" not in repr(burrow.settings)
    finally:
        burrow.close()
