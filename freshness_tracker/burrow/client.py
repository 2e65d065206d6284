"""Burrow's REST API over one keep-alive session, with hard deadlines and bounded retries.

Connection errors, timeouts and 5xx are retried with exponential backoff (tenacity); a 404 is
an answer ("Burrow does not know this"), never retried. Every requests/JSON error is mapped
here to a BurrowError, so the rest of the code never sees a third-party exception.

`burrow.timeout` bounds a whole response (connect, headers and body), not each socket read:
requests' own timeout restarts with every byte, so a body dripped one byte a second never trips
it. A reaper thread shuts the socket down at the deadline, whatever the HTTP library is doing,
and no request outlives the cycle's deadline either (`freshness_tracker.deadline`). Bodies are
decoded here, not by urllib3, so their decoded size is bounded while it grows: a 1 MB gzip
that expands to 1 GiB costs `burrow.maxResponseBytes`, not the process.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import itertools
import json
import logging
import socket
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import requests
import urllib3
from requests.adapters import HTTPAdapter
from tenacity import (
    RetryCallState,
    retry,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
    wait_exponential,
)
from tenacity.stop import stop_base
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from freshness_tracker.burrow import parse
from freshness_tracker.burrow.url import split_credentials
from freshness_tracker.deadline import Deadline, cycle_deadline
from freshness_tracker.deadline import current as current_deadline
from freshness_tracker.domain.model import ClusterLags, GroupLags
from freshness_tracker.domain.names import escaped, usable_group_names
from freshness_tracker.errors import (
    BurrowError,
    BurrowNotFound,
    BurrowResponseError,
    BurrowUnavailable,
)

__all__ = ["BurrowClient", "BurrowSettings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BurrowSettings:
    """Where Burrow is and how patiently to ask it."""

    url: str = "http://127.0.0.1:8000"
    timeout_s: float = 10.0
    retries: int = 2  # extra attempts after the first, for connection errors and 5xx only
    backoff_s: float = 0.2
    concurrency: int = 8  # parallel /lag requests per cluster
    username: str = ""
    password: str = field(default="", repr=False)
    ca_file: str = ""
    tls_verify: bool = True
    max_response_bytes: int = 16 * 1024 * 1024  # decoded; a bigger body is a failed request


#: Encodings we decode ourselves (so the decoded size is bounded as it grows); nothing else is
#: asked for, and a body in another one is refused.
_ACCEPT_ENCODING = "gzip, deflate"
_CHUNK_BYTES = 64 * 1024
#: How long cluster_lags() waits for its workers past the cycle deadline (their requests are
#: cut at that deadline by the reaper; this only covers a worker that is slow to notice).
_JOIN_SLACK_S = 2.0
_READ_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException,
                OSError)


class _InFlight:
    """One request: its hard deadline and, once the pool lends one, its connection."""

    __slots__ = ("_lock", "connection", "cut", "deadline", "done")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.connection: Any = None
        self.cut = False
        self.done = False
        self._lock = threading.Lock()

    def finish(self) -> None:
        """No cut after this: called before the connection goes back to the pool, where
        another request may take it."""
        with self._lock:
            self.done = True

    def cut_off(self) -> None:
        """Shut the socket down: a read blocked in any library returns at once."""
        with self._lock:
            if self.done:
                return
            self.cut = True
            sock = getattr(self.connection, "sock", None)
            if sock is not None:
                # socket.socket's shutdown, not SSLSocket's: that one also drops the TLS state
                # under the reading thread (a ValueError there, not an OSError). Only the
                # syscall is wanted: it wakes the blocked read.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


_tracked = threading.local()


class _TrackingMixin:
    """Tells the request running in this thread which connection it was lent."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        inflight = getattr(_tracked, "inflight", None)
        if inflight is not None:
            inflight.connection = conn
        return conn


class _TrackingHTTPPool(_TrackingMixin, HTTPConnectionPool):
    pass


class _TrackingHTTPSPool(_TrackingMixin, HTTPSConnectionPool):
    pass


class _TrackingAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _TrackingHTTPPool, "https": _TrackingHTTPSPool}


class _Reaper:
    """One daemon thread that cuts off every request still running at its deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _InFlight]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, inflight: _InFlight) -> None:
        with self._cond:
            heapq.heappush(self._heap, (inflight.deadline, next(self._seq), inflight))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="burrow-reaper",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    inflight = heapq.heappop(self._heap)[2]
                    if not inflight.done:
                        inflight.cut_off()
                wait = self._heap[0][0] - now if self._heap else None
                self._cond.wait(wait)


class BurrowClient:
    """The calls a cycle needs: health, clusters, servers, consumers, per-group lag."""

    def __init__(self, settings: BurrowSettings, session: requests.Session | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        self.settings = settings
        #: With a clock (the cycle's: the exporter and the Spark job pass theirs), each `/lag`
        #: answer is stamped when it arrives (`GroupLags.observed_ms`); without one the cycle
        #: uses the moment all of them had arrived.
        self._clock = clock
        # Credentials in the URL (https://user:pass@burrow) are used as basic auth and removed
        # from the URL, which appears in every error message and log line.
        self._base, url_auth = _split_userinfo(settings.url.rstrip("/"))
        self._session = session or requests.Session()
        # Keep-alive connections for the per-cluster pools of several clusters at once.
        adapter = _TrackingAdapter(pool_connections=4,
                                   pool_maxsize=4 * max(settings.concurrency, 4))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        if settings.username:
            self._session.auth = (settings.username, settings.password)
        elif url_auth is not None:
            self._session.auth = url_auth
        # Passed with every request: a session-level `verify` loses to REQUESTS_CA_BUNDLE /
        # CURL_CA_BUNDLE in the environment (requests merges those over it), which would
        # silently replace burrow.caFile with the system bundle.
        self._verify: bool | str = settings.ca_file or settings.tls_verify
        self._session.verify = self._verify
        # One pool of `concurrency` /lag workers per cluster: a bulkhead, so one cluster whose
        # /lag answers are slow cannot queue another cluster's requests behind its own.
        self._executors: dict[str, ThreadPoolExecutor] = {}
        self._executors_lock = threading.Lock()
        self._reaper = _Reaper()
        backoff = wait_exponential(multiplier=settings.backoff_s, max=5)
        self._get_json: Callable[[str], Any] = retry(
            reraise=True,
            retry=retry_if_exception_type(BurrowUnavailable),
            stop=stop_any(stop_after_attempt(settings.retries + 1), _CycleDeadlineNear()),
            wait=lambda state: _capped_by_deadline(backoff(state)),
        )(self._get_json_once)

    @property
    def url(self) -> str:
        """Burrow's base URL without credentials: safe to print."""
        return self._base

    def close(self) -> None:
        with self._executors_lock:
            executors, self._executors = list(self._executors.values()), {}
        for executor in executors:
            executor.shutdown(wait=False, cancel_futures=True)
        self._reaper.close()
        self._session.close()

    def _executor_for(self, cluster: str) -> ThreadPoolExecutor:
        with self._executors_lock:
            executor = self._executors.get(cluster)
            if executor is None:
                executor = ThreadPoolExecutor(max_workers=max(self.settings.concurrency, 1),
                                              thread_name_prefix=f"burrow-{cluster}")
                self._executors[cluster] = executor
            return executor

    # --- HTTP -------------------------------------------------------------------------

    def _url(self, *parts: str) -> str:
        return self._base + "/" + "/".join(quote(p, safe="") for p in parts)

    def _get(self, url: str) -> tuple[int, bytes]:
        """(HTTP status, decoded body) within min(burrow.timeout, the cycle's deadline)."""
        cycle = current_deadline()
        limit_s = self.settings.timeout_s
        if cycle is not None:
            limit_s = min(limit_s, cycle.remaining())
        if limit_s <= 0:
            raise BurrowUnavailable(f"not asking Burrow for {url}: the cycle deadline was "
                                    "reached", url)
        inflight = _InFlight(time.monotonic() + limit_s)
        _tracked.inflight = inflight
        self._reaper.watch(inflight)
        try:
            response = self._session.get(url, timeout=limit_s, verify=self._verify, stream=True,
                                         headers={"Accept-Encoding": _ACCEPT_ENCODING})
            try:
                status = response.status_code
                if status >= 500:
                    raise BurrowUnavailable(f"Burrow answered HTTP {status} for {url}", url)
                body = b"" if status == 404 else self._read_body(response, url)
            finally:
                inflight.finish()
                response.close()
        except BurrowError:
            raise
        except requests.Timeout as exc:
            raise BurrowUnavailable(f"Burrow did not answer {url} within {limit_s:g}s",
                                    url) from exc
        except _READ_ERRORS as exc:
            if inflight.cut:
                raise BurrowUnavailable(f"Burrow did not finish answering {url} within "
                                        f"{limit_s:g}s (connection cut)", url) from exc
            raise BurrowUnavailable(f"cannot reach Burrow at {url}: {_reason(exc)}", url) from exc
        finally:
            inflight.finish()
            _tracked.inflight = None
        if inflight.cut:  # the deadline hit as the body ended: do not trust what was read
            raise BurrowUnavailable(f"Burrow did not finish answering {url} within "
                                    f"{limit_s:g}s", url)
        return status, body

    def _read_body(self, response: requests.Response, url: str) -> bytes:
        """The body, decoded here with its decoded size bounded as it grows."""
        limit = self.settings.max_response_bytes
        encoding = response.headers.get("Content-Encoding", "").strip().lower()
        decoder: Any = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib framing
        elif encoding not in ("", "identity"):
            raise BurrowResponseError(f"Burrow answered {url} in Content-Encoding {encoding!r}, "
                                      f"which was not asked for", url)
        out = bytearray()
        try:
            for chunk in response.raw.stream(_CHUNK_BYTES, decode_content=False):
                pending = chunk
                while pending:
                    if decoder is None:
                        data, pending = pending, b""
                    else:
                        data = decoder.decompress(pending, limit + 1 - len(out))
                        pending = decoder.unconsumed_tail
                    out += data
                    if len(out) > limit:
                        raise BurrowResponseError(
                            f"Burrow's answer to {url} is larger than burrow.maxResponseBytes "
                            f"({limit} bytes decoded); raise it if a group really has that "
                            "many partitions", url)
            if decoder is not None:
                out += decoder.flush()
        except zlib.error as exc:
            raise BurrowResponseError(f"Burrow answered {url} with a body that does not "
                                      f"decode as {encoding}: {exc}", url) from exc
        if len(out) > limit:
            raise BurrowResponseError(f"Burrow's answer to {url} is larger than "
                                      f"burrow.maxResponseBytes ({limit} bytes decoded)", url)
        return bytes(out)

    def _get_json_once(self, url: str) -> Any:
        status, raw = self._get(url)
        if status == 404:
            raise BurrowNotFound(f"Burrow does not know {url} (HTTP 404)", url)
        try:
            body = json.loads(raw)
        except ValueError as exc:
            excerpt = raw[:120].decode(errors="replace").replace("\n", " ")
            raise BurrowResponseError(
                f"Burrow answered {url} with HTTP {status} and a body that is not JSON: "
                f"{excerpt!r}", url) from exc
        except RecursionError:  # JSON nested thousands deep: never let it escape as a crash
            raise BurrowResponseError(f"Burrow answered {url} with JSON nested too deep to "
                                      "parse", url) from None
        if status != 200:
            raise BurrowResponseError(f"Burrow answered HTTP {status} for {url}", url)
        if isinstance(body, dict) and body.get("error") is True:
            raise BurrowResponseError(f"Burrow reported an error for {url}", url)
        return body

    # --- API --------------------------------------------------------------------------

    def healthy(self) -> bool:
        """`GET /burrow/admin` answers exactly `GOOD` in every Burrow version."""
        url = self._base + "/burrow/admin"
        try:
            status, body = self._get(url)
        except BurrowError:
            return False
        return status == 200 and body.strip() == b"GOOD"

    def clusters(self) -> list[str]:
        url = self._url("v3", "kafka")
        return parse.parse_cluster_list(self._get_json(url), url)

    def cluster_servers(self, cluster: str) -> list[str]:
        url = self._url("v3", "kafka", cluster)
        return parse.parse_cluster_servers(self._get_json(url), url)

    def consumers(self, cluster: str) -> list[str]:
        url = self._url("v3", "kafka", cluster, "consumer")
        return parse.parse_consumer_list(self._get_json(url), url)

    def group_lag(self, cluster: str, group: str) -> GroupLags:
        """All partitions of one group; BurrowNotFound when Burrow no longer knows it."""
        url = self._url("v3", "kafka", cluster, "consumer", group, "lag")
        body = self._get_json(url)
        observed = self._clock() if self._clock is not None else None
        # The offsets are Burrow's as of this answer: freshness is measured at this moment,
        # whatever the Kafka reads that follow cost.
        lags = parse.parse_group_lag(body, cluster, group, url)
        return lags if self._clock is None else replace(lags, observed_ms=observed)

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        """`/lag` for every group, `concurrency` at a time on the keep-alive session.

        A group that 404s went away between the list and the lag call: it is reported as
        missing (its series disappear). A group whose lag cannot be read, for whatever reason
        (any exception of its request or its parse), is reported failed: one group never costs
        the others or the cycle. A name that is no usable group id is never asked for; it is
        reported rejected.
        """
        names, rejected = usable_group_names(groups)
        executor = self._executor_for(cluster)
        deadline = current_deadline()
        futures: dict[str, Future[GroupLags]] = {}
        failed: list[tuple[str, str]] = []
        for group in names:
            try:
                futures[group] = executor.submit(self._group_lag_before, deadline, cluster, group)
            except RuntimeError as exc:  # the client was closed under the cycle
                failed.append((group, f"not asked: {exc}"))
        found: list[GroupLags] = []
        missing: list[str] = []
        for group, future in futures.items():
            wait = None if deadline is None else max(deadline.remaining(), 0.0) + _JOIN_SLACK_S
            try:
                found.append(future.result(timeout=wait))
            except BurrowNotFound:
                missing.append(group)
            except BurrowError as exc:
                failed.append((group, str(exc)))
            except TimeoutError:
                future.cancel()
                failed.append((group, "no answer from Burrow before the cycle deadline"))
            except Exception as exc:  # one group's body must never cost the other groups
                log.debug("cluster=%s group %s: unexpected %s", cluster, escaped(group),
                          type(exc).__name__, exc_info=not isinstance(exc, RecursionError))
                failed.append((group, f"unusable answer from Burrow: {type(exc).__name__}"))
        return ClusterLags(cluster, tuple(found), tuple(missing), tuple(failed), tuple(rejected))

    def _group_lag_before(self, deadline: Deadline | None, cluster: str, group: str) -> GroupLags:
        """group_lag() on a worker thread, under the deadline of the cycle that asked."""
        with cycle_deadline(deadline):
            return self.group_lag(cluster, group)


def _split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without `user:password@`, (user, password) or None).

    Split at the last `@` before anything parses the URL: urlsplit ends the host at a `#`, `/`
    or `?` inside the password and would leave the credentials in the URL that gets printed.
    """
    base, user, password = split_credentials(url)
    return base, (None if user is None else (user, password or ""))


class _CycleDeadlineNear(stop_base):
    """No retry once the cycle has (almost) no time left for one."""

    def __call__(self, retry_state: RetryCallState) -> bool:
        deadline = current_deadline()
        return deadline is not None and deadline.remaining() < 0.1


def _capped_by_deadline(seconds: float) -> float:
    """A backoff never sleeps past the cycle's deadline."""
    deadline = current_deadline()
    return seconds if deadline is None else max(0.0, min(seconds, deadline.remaining()))


def _reason(exc: BaseException) -> str:
    """The innermost cause, without the credential-bearing URL repr requests sometimes adds."""
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        nxt = cause.__cause__ or cause.__context__
        if nxt is None:
            break
        cause = nxt
    return type(cause).__name__
