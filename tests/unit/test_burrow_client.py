"""BurrowClient over HTTP mocked with `responses`: retries, 404s, bad bodies, auth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
import responses

from freshness_tracker.burrow.client import BurrowClient, BurrowSettings
from freshness_tracker.errors import BurrowNotFound, BurrowResponseError, BurrowUnavailable

DATA = Path(__file__).parent.parent / "data" / "burrow"
URL = "http://burrow.test:8000"


def client(**kw: object) -> BurrowClient:
    return BurrowClient(BurrowSettings(url=URL, retries=2, backoff_s=0.001, **kw))  # type: ignore[arg-type]


def body(name: str) -> str:
    return (DATA / name).read_text()


@responses.activate
def test_health_good() -> None:
    responses.get(f"{URL}/burrow/admin", body="GOOD")
    assert client().healthy()


@responses.activate
def test_health_bad_or_down() -> None:
    responses.get(f"{URL}/burrow/admin", body="STARTING", status=503)
    assert not client().healthy()


@responses.activate
def test_cluster_lags_with_a_vanished_group() -> None:
    responses.get(f"{URL}/v3/kafka/local/consumer/live-group/lag",
                  body=body("v3_consumer_live-group_lag.json"))
    responses.get(f"{URL}/v3/kafka/local/consumer/gone/lag",
                  body=body("v3_consumer_unknown_404.json"), status=404)
    lags = client().cluster_lags("local", ["live-group", "gone"])
    assert [g.consumer for g in lags.groups] == ["live-group"]
    assert lags.missing_groups == ("gone",)
    assert len(responses.calls) == 2  # the 404 was not retried


@responses.activate
def test_retries_5xx_then_succeeds() -> None:
    responses.get(f"{URL}/v3/kafka", status=500)
    responses.get(f"{URL}/v3/kafka", body=body("v3_kafka.json"))
    assert client().clusters() == ["local"]
    assert len(responses.calls) == 2


@responses.activate
def test_gives_up_after_retries() -> None:
    responses.get(f"{URL}/v3/kafka", body=requests.ConnectionError("refused"))
    with pytest.raises(BurrowUnavailable):
        client().clusters()
    assert len(responses.calls) == 3


@responses.activate
def test_html_body_is_a_response_error_not_retried() -> None:
    responses.get(f"{URL}/v3/kafka", body="<html>proxy error</html>")
    with pytest.raises(BurrowResponseError, match="not JSON"):
        client().clusters()
    assert len(responses.calls) == 1


@responses.activate
def test_truncated_json() -> None:
    responses.get(f"{URL}/v3/kafka", body=body("v3_kafka.json")[:20])
    with pytest.raises(BurrowResponseError):
        client().clusters()


@responses.activate
def test_unknown_cluster_404() -> None:
    responses.get(f"{URL}/v3/kafka/nope", status=404,
                  json={"error": True, "message": "cluster module not found"})
    with pytest.raises(BurrowNotFound):
        client().cluster_servers("nope")


@responses.activate
def test_group_names_are_url_quoted() -> None:
    responses.get(f"{URL}/v3/kafka/local/consumer/a%2Fb%20c/lag",
                  body=body("v3_consumer_live-group_lag.json"))
    assert client().group_lag("local", "a/b c").consumer == "a/b c"


@responses.activate
def test_basic_auth_sent_and_password_not_in_repr() -> None:
    responses.get(f"{URL}/v3/kafka", body=body("v3_kafka.json"))
    c = client(username="u", password="s3cret")
    c.clusters()
    assert responses.calls[0].request.headers["Authorization"].startswith("Basic ")
    assert "s3cret" not in repr(c.settings)


@responses.activate
def test_error_true_body_is_an_error() -> None:
    responses.get(f"{URL}/v3/kafka", json={"error": True, "message": "boom"})
    with pytest.raises(BurrowResponseError):
        client().clusters()


def test_body_shapes_match_captures() -> None:
    assert json.loads(body("v3_kafka.json"))["clusters"] == ["local"]


# --- the transport against a real (misbehaving) HTTP(S) server ---------------------------


NAMES = [f"cluster-{i}" for i in range(50)]


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_dripped_body_is_cut_at_burrow_timeout_as_a_whole(tls: bool, tmp_path: Path) -> None:
    """requests' timeout restarts with every byte; burrow.timeout bounds the whole answer."""
    import time

    from tests.faults.fake_burrow_server import ANY, Fault, FaultyBurrow
    from tests.faults.harness import make_certs

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
        server.add(ANY, Fault.drip(0.05))
        started = time.monotonic()
        with pytest.raises(BurrowUnavailable, match="within 1s"):
            burrow.clusters()
        assert time.monotonic() - started < 2.5
    finally:
        burrow.close()
        server.stop()


def test_a_gzip_body_is_decoded_and_a_bomb_is_refused() -> None:
    from tests.faults.fake_burrow_server import ANY, Fault, FaultyBurrow

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
