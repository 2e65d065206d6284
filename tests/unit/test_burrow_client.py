"""BurrowClient against a real HTTP(S) server on 127.0.0.1: retries, 404s, bad bodies, auth,
keep-alive connections, and the transport's bounds (a dripped body, a gzip bomb, a body longer
than burrow.maxResponseBytes, a body cut short)."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.deadline import Deadline, cycle_deadline
from freshness_tracker.domain.model import GroupLags, PartitionLag
from freshness_tracker.errors import BurrowNotFound, BurrowResponseError, BurrowUnavailable
from tests.support.http_burrow import DROP, RecordingBurrow, ok
from tests.support.http_server import LocalHttpServer

DATA = Path(__file__).parent.parent / "data" / "burrow"


@pytest.fixture
def server() -> Iterator[RecordingBurrow]:
    with RecordingBurrow() as s:
        yield s


@pytest.fixture
def make_client(server: RecordingBurrow) -> Iterator[Any]:
    made: list[BurrowClient] = []

    def make(**kw: Any) -> BurrowClient:
        settings = {"url": server.url, "retries": 2, "backoff_s": 0.001} | kw
        made.append(BurrowClient(BurrowSettings(**settings)))
        return made[-1]

    yield make
    for c in made:
        c.close()


def body(name: str) -> str:
    return (DATA / name).read_text()


def unlabelled_lag() -> str:
    """The captured live-group answer without its `status.group` label: served for any group
    (a body labelled with another group is refused as not that group's answer)."""
    answer = json.loads(body("v3_consumer_live-group_lag.json"))
    del answer["status"]["group"]
    return json.dumps(answer)


def test_health_good(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/burrow/admin", ok("GOOD"))
    assert make_client().health() is None


def test_health_bad_or_down(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/burrow/admin", ok("STARTING", 503))
    assert "answered HTTP 503" in (make_client().health() or "")
    down = make_client(url="http://127.0.0.1:1").health() or ""  # nothing listens
    assert "Connection refused (ConnectionRefusedError)" in down


def test_cluster_lags_with_a_vanished_group(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka/local/consumer/live-group/lag",
                 ok(body("v3_consumer_live-group_lag.json")))
    server.route("/v3/kafka/local/consumer/gone/lag",
                 ok(body("v3_consumer_unknown_404.json"), 404))
    lags = make_client().cluster_lags("local", ["live-group", "gone"])
    assert [g.consumer for g in lags.groups] == ["live-group"]
    assert lags.missing_groups == ("gone",)
    assert len(server.calls) == 2  # the 404 was not retried


def test_retries_5xx_then_succeeds(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka", ok(b"", 500), ok(body("v3_kafka.json")))
    assert make_client().clusters() == ["local"]
    assert len(server.calls) == 2


def test_gives_up_after_retries(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka", DROP)  # the connection closes with no answer, every time
    with pytest.raises(BurrowUnavailable, match=r"cannot reach Burrow at .*RemoteDisconnected"):
        make_client().clusters()
    assert len(server.calls) == 3


def test_backoff_doubles_and_the_cycle_deadline_stops_the_retries(
        server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka", ok(b"", 502))
    started = time.monotonic()
    with pytest.raises(BurrowUnavailable, match="HTTP 502"):
        make_client(retries=3, backoff_s=0.1).clusters()
    assert len(server.calls) == 4
    assert time.monotonic() - started >= 0.1 + 0.2 + 0.4  # 0.1 × 2^(attempt − 1)
    server.calls.clear()
    started = time.monotonic()
    with cycle_deadline(Deadline.after(0.3)), pytest.raises(BurrowUnavailable):
        make_client(retries=10, backoff_s=1.0).clusters()
    assert time.monotonic() - started < 1.0  # no backoff sleeps past the cycle's deadline
    assert len(server.calls) == 1


def test_html_body_is_a_response_error_not_retried(server: RecordingBurrow,
                                                  make_client: Any) -> None:
    server.route("/v3/kafka", ok("<html>proxy error</html>"))
    with pytest.raises(BurrowResponseError, match="not JSON"):
        make_client().clusters()
    assert len(server.calls) == 1


def test_truncated_json(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka", ok(body("v3_kafka.json")[:20]))
    with pytest.raises(BurrowResponseError):
        make_client().clusters()


def test_a_body_shorter_than_its_content_length_is_unavailable_and_retried(
        server: RecordingBurrow, make_client: Any) -> None:
    whole = body("v3_kafka.json").encode()
    server.route("/v3/kafka", ok(whole[:20], length=len(whole)), ok(whole))
    assert make_client().clusters() == ["local"]  # the cut answer was retried
    server.route("/v3/kafka", ok(whole[:20], length=len(whole)))
    with pytest.raises(BurrowUnavailable, match="IncompleteRead"):
        make_client(retries=0).clusters()


def test_a_chunked_body_is_read(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka/local/consumer/live-group/lag",
                 ok(body("v3_consumer_live-group_lag.json"), chunked=True))
    assert make_client().group_lag("local", "live-group").partitions


def test_a_content_length_over_the_limit_is_refused_unread(server: RecordingBurrow,
                                                          make_client: Any) -> None:
    server.route("/v3/kafka", ok(b" " * 5000))
    with pytest.raises(BurrowResponseError, match="maxResponseBytes"):
        make_client(max_response_bytes=4096).clusters()
    server.route("/v3/kafka", ok(b" " * 5000, chunked=True))  # no length: cut as it grows
    with pytest.raises(BurrowResponseError, match="maxResponseBytes"):
        make_client(max_response_bytes=4096).clusters()


def test_unknown_cluster_404(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka/nope", ok({"error": True, "message": "cluster module not found"},
                                      404))
    with pytest.raises(BurrowNotFound):
        make_client().cluster_servers("nope")


def test_group_names_are_url_quoted(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka/local/consumer/a%2Fb%20c/lag",
                 ok(unlabelled_lag()))
    assert make_client().group_lag("local", "a/b c").consumer == "a/b c"
    assert [c.path for c in server.calls] == ["/v3/kafka/local/consumer/a%2Fb%20c/lag"]


def test_a_path_prefix_in_the_url_is_kept(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/burrow-behind/ingress/v3/kafka", ok(body("v3_kafka.json")))
    client = make_client(url=f"{server.url}/burrow-behind/ingress/")
    assert client.clusters() == ["local"]
    assert client.url == f"{server.url}/burrow-behind/ingress"


def test_basic_auth_sent_and_password_not_in_repr(server: RecordingBurrow,
                                                  make_client: Any) -> None:
    server.route("/v3/kafka", ok(body("v3_kafka.json")))
    c = make_client(username="u", password="s3cret")
    c.clusters()
    token = base64.b64encode(b"u:s3cret").decode()
    assert server.calls[0].headers["Authorization"] == f"Basic {token}"
    assert "s3cret" not in repr(c.settings)


def test_error_true_body_is_an_error(server: RecordingBurrow, make_client: Any) -> None:
    server.route("/v3/kafka", ok({"error": True, "message": "boom"}))
    with pytest.raises(BurrowResponseError):
        make_client().clusters()


def test_body_shapes_match_captures() -> None:
    assert json.loads(body("v3_kafka.json"))["clusters"] == ["local"]


# --- keep-alive connections --------------------------------------------------------------


def test_requests_share_kept_alive_connections(server: RecordingBurrow,
                                               make_client: Any) -> None:
    """200 `/lag` calls, 4 at a time, come on at most 4 connections (plus one for clusters)."""
    for i in range(200):
        server.route(f"/v3/kafka/local/consumer/g{i}/lag",
                     ok(unlabelled_lag()))
    server.route("/v3/kafka", ok(body("v3_kafka.json")))
    client = make_client(concurrency=4)
    assert client.clusters() == ["local"]
    lags = client.cluster_lags("local", [f"g{i}" for i in range(200)])
    assert len(lags.groups) == 200 and not lags.failed_groups
    assert len(server.calls) == 201
    assert server.connections <= 4


def test_at_most_concurrency_requests_are_in_flight(make_client: Any) -> None:
    """A Burrow that thinks 50 ms per answer is asked by every worker `burrow.concurrency`
    allows, and never by more."""
    answer = unlabelled_lag()
    with RecordingBurrow() as slow:
        for i in range(24):
            slow.route(f"/v3/kafka/local/consumer/g{i}/lag", ok(answer, delay_s=0.05))
        lags = make_client(url=slow.url, concurrency=4).cluster_lags(
            "local", [f"g{i}" for i in range(24)])
        assert len(lags.groups) == 24
        assert slow.most_in_flight == 4


def test_slow_groups_later_in_the_list_hold_no_other_group_back(
        make_client: Any) -> None:
    """8 groups keep Burrow thinking past the cycle deadline: they hold 8 of the 16 workers,
    and the other 8 answer the 110 fast groups; only the 8 fail, at the deadline."""
    answer = unlabelled_lag()
    fast = [f"a{i}" for i in range(10)] + [f"z{i}" for i in range(100)]
    slow = [f"slow{i}" for i in range(8)]
    with RecordingBurrow() as burrow:
        for name in fast:
            burrow.route(f"/v3/kafka/local/consumer/{name}/lag", ok(answer))
        for name in slow:
            burrow.route(f"/v3/kafka/local/consumer/{name}/lag", ok(answer, delay_s=8.0))
        client = make_client(url=burrow.url, concurrency=16, retries=0)
        with cycle_deadline(Deadline.after(5.0)):
            lags = client.cluster_lags("local", fast[:10] + slow + fast[10:])
    assert sorted(g.consumer for g in lags.groups) == sorted(fast)
    assert sorted(g for g, _ in lags.failed_groups) == sorted(slow)


def test_a_slow_first_answer_holds_no_other_group_back(make_client: Any) -> None:
    """The first group's answer takes 3 s: the 30 other groups (50 ms each, 3 other workers:
    ~0.5 s) are all in before that one answer is."""
    answer = unlabelled_lag()
    with RecordingBurrow() as burrow:
        burrow.route("/v3/kafka/local/consumer/g0/lag", ok(answer, delay_s=3.0))
        for i in range(1, 31):
            burrow.route(f"/v3/kafka/local/consumer/g{i}/lag", ok(answer, delay_s=0.05))
        client = make_client(url=burrow.url, concurrency=4, timeout_s=10.0)
        arrived: dict[str, float] = {}
        group_lag = client.group_lag

        def recorded(cluster: str, group: str) -> Any:
            try:
                return group_lag(cluster, group)
            finally:
                arrived[group] = time.monotonic()

        client.group_lag = recorded
        lags = client.cluster_lags("local", [f"g{i}" for i in range(31)])
    assert len(lags.groups) == 31
    assert burrow.most_in_flight == 4
    assert max(t for g, t in arrived.items() if g != "g0") < arrived["g0"]


def test_a_connection_the_server_closed_is_replaced_without_an_error(make_client: Any) -> None:
    """`Connection: close` is honoured, and an idle connection the server closed (Burrow's
    idle timeout) costs neither an error nor a retry: the next call opens a new one."""
    with RecordingBurrow(idle_timeout_s=0.2) as server:
        server.route("/v3/kafka", ok(body("v3_kafka.json"), close=True),
                     ok(body("v3_kafka.json")))
        client = make_client(url=server.url, retries=0)
        assert client.clusters() == ["local"]
        assert client.clusters() == ["local"]
        assert client.clusters() == ["local"]  # kept alive
        assert [c.connection for c in server.calls] == [1, 2, 2]
        time.sleep(0.6)  # the server closes the idle connection
        assert client.clusters() == ["local"]
        assert [c.connection for c in server.calls] == [1, 2, 2, 3]


def test_the_environment_is_not_read(server: RecordingBurrow, make_client: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Proxy variables do not divert Burrow's requests (no proxy is ever used)."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:1")
    server.route("/v3/kafka", ok(body("v3_kafka.json")))
    assert make_client(retries=0).clusters() == ["local"]
    assert server.calls[0].headers["Host"] == f"127.0.0.1:{server.port}"


# --- the transport against a real (misbehaving) HTTP(S) server ---------------------------


NAMES = [f"cluster-{i}" for i in range(50)]


@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_dripped_answer_is_cut_at_burrow_timeout_as_a_whole(
        tls: bool, headers: bool, tmp_path: Path) -> None:
    """A socket timeout restarts with every byte; burrow.timeout bounds the whole answer, its
    status line and headers as well as its body."""
    import time

    from tests.faults.harness import make_certs
    from tests.support.fake_burrow import ANY, Fault, FaultyBurrow

    certs = make_certs(tmp_path) if tls else None
    server = FaultyBurrow(None, certfile=str(certs.cert) if certs else None,
                          keyfile=str(certs.key) if certs else None).start()
    server.serve_static("/v3/kafka", {"error": False, "clusters": NAMES,
                                      "request": {}})
    settings = BurrowSettings(url=server.url, timeout_s=1.0, retries=0,
                              ca_file=str(certs.ca) if certs else "")
    burrow = BurrowClient(settings)
    try:
        assert burrow.clusters() == NAMES  # the same server, answering normally
        server.add(ANY, Fault.drip_headers(0.05) if headers else Fault.drip(0.05))
        started = time.monotonic()
        with pytest.raises(BurrowUnavailable, match="within 1s"):
            burrow.clusters()
        assert time.monotonic() - started < 2.5
    finally:
        burrow.close()
        server.stop()


def test_a_gzip_body_is_decoded_and_a_bomb_is_refused() -> None:
    from tests.support.fake_burrow import ANY, Fault, FaultyBurrow

    server = FaultyBurrow(None).start()
    burrow = BurrowClient(BurrowSettings(url=server.url, retries=0,
                                         max_response_bytes=1 << 20))
    try:
        server.add(ANY, Fault.gzip_bomb(8 << 20))
        with pytest.raises(BurrowResponseError, match="maxResponseBytes"):
            burrow.clusters()
        server.clear()
        server.add(ANY, Fault.gzip_bomb(512 << 10))  # 512 KiB of JSON whitespace: fits
        with pytest.raises(BurrowResponseError, match="expected a JSON object"):  # decoded
            burrow.clusters()
    finally:
        burrow.close()
        server.stop()


def test_groups_not_asked_when_the_client_closes_under_a_cycle(server: RecordingBurrow,
                                                               make_client: Any) -> None:
    """close() (shutdown) while a cycle waits: the requests not yet sent are reported failed
    with the reason, not as an unusable answer."""
    for i in range(20):
        server.route(f"/v3/kafka/local/consumer/g{i}/lag",
                     ok(unlabelled_lag()))
    client = make_client(concurrency=1)
    gate = threading.Event()
    real = client.group_lag

    def slow(cluster: str, group: str) -> Any:
        gate.wait(5)
        return real(cluster, group)

    client.group_lag = slow  # type: ignore[method-assign]
    closer = threading.Timer(0.2, lambda: (client.close(), gate.set()))
    closer.start()
    lags = client.cluster_lags("local", [f"g{i}" for i in range(20)])
    closer.join()
    reasons = {reason for _group, reason in lags.failed_groups}
    assert len(lags.groups) + len(lags.failed_groups) == 20
    assert "not asked: the Burrow client was closed" in reasons
    assert not any("unusable" in r for r in reasons)


def test_every_lag_body_goes_through_the_one_checked_decoder(
        server: RecordingBurrow, make_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `/lag` body, Burrow's own shape included, is json-decoded and checked entry by
    entry (`parse._partition`): a whole offset written as a float is the same answer, `error:
    true` fails the group, a NaN `complete` (json's, not JSON's) is 0.0."""
    from freshness_tracker.burrow import parse

    checked: list[Any] = []
    partition = parse._partition
    monkeypatch.setattr(parse, "_partition", lambda *a: checked.append(a) or partition(*a))
    path = "/v3/kafka/local/consumer/live-group/lag"
    live = json.loads(body("v3_consumer_live-group_lag.json"))
    server.route(path, ok(json.dumps(live)))
    plain = make_client().group_lag("local", "live-group")
    assert plain.partitions and len(checked) == len(plain.partitions)
    live["status"]["partitions"][0]["end"]["offset"] = 129.0
    server.route(path, ok(json.dumps(live)))
    assert make_client().group_lag("local", "live-group").partitions == plain.partitions
    server.route(path, ok(json.dumps({**live, "error": True})))
    with pytest.raises(BurrowResponseError, match="reported an error"):
        make_client().group_lag("local", "live-group")
    live["status"]["partitions"][0]["complete"] = float("nan")
    server.route(path, ok(json.dumps(live)))
    assert make_client().group_lag("local", "live-group").partitions[0].complete == 0.0


def test_a_failed_group_keeps_no_answer_alive_in_a_reference_cycle(
        server: RecordingBurrow, make_client: Any) -> None:
    """A failed group's exception (its traceback holds the worker's frame, which holds every
    answer of the call) must not form a cycle that only the cyclic collector frees: the
    answers of 200 groups would stay in memory until its next middle collection."""
    import gc

    for i in range(200):
        server.route(f"/v3/kafka/local/consumer/g{i}/lag",
                     ok(unlabelled_lag()))
    server.route("/v3/kafka/local/consumer/bad/lag", ok(b"", 500))
    client = make_client(retries=0, concurrency=4)
    names = [f"g{i}" for i in range(200)] + ["bad"]
    client.cluster_lags("local", names)  # connections and threads made
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector frees is kept in gc.garbage, to look at
    try:
        lags = client.cluster_lags("local", names)
        assert [g for g, _ in lags.failed_groups] == ["bad"] and len(lags.groups) == 200
        del lags
        gc.collect()
        held = [o for o in gc.garbage if isinstance(o, GroupLags | PartitionLag)]
        assert not held, f"{len(held)} answers were freed only by the cyclic collector"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_an_answer_that_closes_its_connection_is_read_to_its_end() -> None:
    """An HTTP/1.0 answer (no keep-alive) whose body comes a moment after its headers: the
    connection lets its socket go as soon as the headers say it will close, and the body must
    still be read from it (it was cut off with EBADF when only the connection held the socket
    open)."""
    from http.server import BaseHTTPRequestHandler

    answer = unlabelled_lag().encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.flush()
            time.sleep(0.2)
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = LocalHttpServer(Handler)
    server.start()
    client = BurrowClient(BurrowSettings(url=server.url, retries=0))
    try:
        lags = client.cluster_lags("local", ["a", "b", "c"])
    finally:
        client.close()
        server.stop()
    assert not lags.failed_groups and len(lags.groups) == 3
