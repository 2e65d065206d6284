"""Burrow's REST API through `requests`, one Session (and its connection pool) per client, with
`tenacity` for the retries.

Connection errors, timeouts and 5xx are retried with exponential backoff; a 404 is an answer
("Burrow does not know this"), never retried. Every transport/JSON error is mapped here to a
BurrowError whose text names the URL and the failure's type, never an exception's own text (it
may carry what the server sent), so the rest of the code never sees a third-party exception.

What bounds what, the simple way: each request gets min(`burrow.timeout`, what is left of the
cycle's deadline) as its connect timeout and as the time its answer must be read in: every read
of the answer (status line, headers, body) waits only for what is left of it, so an answer
dripped a byte at a time is cut then, not when the server stops. The body is streamed and its
decoded size checked as it grows, so a gzip bomb costs `burrow.maxResponseBytes`, not the
process. Retries stop at the deadline. What
nothing here can interrupt (a name lookup the system resolver never answers) is bounded by the
cycle itself: it runs on a thread of its own that the exporter stops waiting for at its deadline
(`freshness_tracker.app`).

Nothing is read from the environment (`trust_env` off: no proxy variables, no netrc, no CA
bundle variable); TLS verifies against `burrow.caFile` when set, else the system's CA store
(OpenSSL's default paths), and `burrow.tlsVerify = false` turns verification off.
"""

from __future__ import annotations

import base64
import collections
import http.client
import http.cookiejar
import io
import json
import logging
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from contextvars import ContextVar
from typing import Any
from urllib.parse import quote

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.exceptions
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)
from tenacity.stop import stop_base
from urllib3.exceptions import InsecureRequestWarning

from freshness_tracker import __version__
from freshness_tracker.burrow import parse
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.burrow.url import split_credentials
from freshness_tracker.deadline import current as current_deadline
from freshness_tracker.deadline import cycle_deadline
from freshness_tracker.domain.model import ClusterLags, GroupLags
from freshness_tracker.domain.names import escaped, usable_group_names
from freshness_tracker.errors import (
    BurrowError,
    BurrowNotFound,
    BurrowResponseError,
    BurrowUnavailable,
)

__all__ = ["BurrowClient"]

log = logging.getLogger(__name__)

#: The encodings urllib3 decodes for us, piece by piece; nothing else is asked for, and a body
#: in another one is refused.
_ACCEPT_ENCODING = "gzip, deflate"
_DECODED = frozenset(("", "identity", "gzip", "x-gzip", "deflate"))
#: The chunk a body is streamed in (decoded): a group's `/lag` answer fits in one.
_READ_BYTES = 64 * 1024
#: How long cluster_lags() waits for its workers past the cycle deadline (a request is cut at
#: that deadline; this only covers a worker that is slow to notice).
_JOIN_SLACK_S = 2.0
#: The longest backoff between two attempts, whatever burrow.backoff and the attempt number.
_MAX_BACKOFF_S = 5.0
#: No retry is started with less than this left of the cycle's deadline.
_RETRY_MARGIN_S = 0.1
#: What breaks an exchange: requests' exceptions, and urllib3's and the socket's while the body
#: is streamed.
_READ_ERRORS = (OSError, urllib3.exceptions.HTTPError, requests.RequestException)


#: When the answer to the request this thread is making must have been read (monotonic).
_answer_by: ContextVar[float | None] = ContextVar("burrow_answer_by", default=None)


class _DeadlineReads(io.RawIOBase):
    """The socket an answer is read from, each read waiting only for what is left of the
    request's time: a socket timeout alone restarts with every byte, so a status line, headers
    or body dripped a byte at a time would never trip it."""

    def __init__(self, file: io.BufferedReader, sock: socket.socket, ends: float) -> None:
        super().__init__()
        #: http.client's own file on the socket, read through: while it is open the socket
        #: stays open for the answer, even once the connection has let it go (`will_close`).
        self._file = file
        self._sock = sock
        self._ends = ends

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        remaining = self._ends - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's time ran out while its answer was read")
        self._sock.settimeout(remaining)
        return self._file.raw.readinto(buffer)

    def close(self) -> None:
        self._file.close()
        super().close()


class _Answer(http.client.HTTPResponse):
    """http.client's response, reading through `_DeadlineReads` while a request of this module
    is being answered."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        ends = _answer_by.get()
        if ends is not None:
            self.fp = io.BufferedReader(_DeadlineReads(self.fp, sock, ends))


class _Connection(urllib3.connection.HTTPConnection):
    response_class = _Answer


class _TlsConnection(urllib3.connection.HTTPSConnection):
    response_class = _Answer


class _Pool(urllib3.HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' adapter on one TLS context of ours (`burrow.caFile` or the system's store,
    never the certifi bundle requests would otherwise load) and on connections whose answers
    are read against the request's deadline."""

    def __init__(self, settings: BurrowSettings, pool_size: int) -> None:
        self._verify = bool(settings.ca_file) or settings.tls_verify
        self._context: ssl.SSLContext | None = None
        if settings.url.lstrip().lower().startswith("https:"):  # plain HTTP loads no CA store
            context = ssl.create_default_context(cafile=settings.ca_file or None)
            if not self._verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                # burrow.tlsVerify = false is the operator's choice: not a warning per request
                warnings.filterwarnings("ignore", category=InsecureRequestWarning)
            self._context = context
        super().__init__(pool_connections=1, pool_maxsize=pool_size, max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        if self._context is not None:
            kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        conn.cert_reqs = "CERT_REQUIRED" if self._verify else "CERT_NONE"
        conn.ca_certs = conn.ca_cert_dir = None


class BurrowClient:
    """The calls a cycle needs: health, clusters, servers, consumers, per-group lag."""

    def __init__(self, settings: BurrowSettings,
                 clock: Callable[[], int] | None = None) -> None:
        self.settings = settings
        #: With a clock (the cycle's: the exporter and the Spark job pass theirs), each `/lag`
        #: answer is stamped when it arrives (`GroupLags.observed_ms`); without one the cycle
        #: uses the moment all of them had arrived.
        self._clock = clock
        # Credentials in the URL (https://user:pass@burrow) are used as basic auth and removed
        # from the URL, which appears in every error message and log line.
        base, url_user, url_password = split_credentials(settings.url.rstrip("/"))
        self._base = base.rstrip("/")
        auth = ((settings.username, settings.password) if settings.username
                else None if url_user is None else (url_user, url_password or ""))
        session = requests.Session()
        session.trust_env = False
        session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        session.headers.update({"Accept-Encoding": _ACCEPT_ENCODING,
                                "Accept": "application/json",
                                "User-Agent": f"freshness-tracker/{__version__}"})
        if auth is not None:  # UTF-8, whatever the password holds (requests would use latin-1)
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
            session.headers["Authorization"] = f"Basic {token}"
        # Kept-alive connections for the per-cluster workers of several clusters at once.
        adapter = _Adapter(settings, 4 * max(settings.concurrency, 4))
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        self._session = session
        # One pool of `concurrency` /lag workers per cluster: a bulkhead, so one cluster whose
        # /lag answers are slow cannot queue another cluster's requests behind its own.
        self._executors: dict[str, ThreadPoolExecutor] = {}
        self._executors_lock = threading.Lock()
        self._closed = False
        self._retrying = Retrying(
            stop=stop_after_attempt(max(settings.retries, 0) + 1) | _DeadlineNear(),
            wait=_Backoff(settings.backoff_s),
            retry=retry_if_exception_type(BurrowUnavailable),
            reraise=True)

    @property
    def url(self) -> str:
        """Burrow's base URL without credentials: safe to print."""
        return self._base

    def close(self) -> None:
        self._closed = True
        with self._executors_lock:
            executors, self._executors = list(self._executors.values()), {}
        for executor in executors:
            executor.shutdown(wait=False, cancel_futures=True)
        self._session.close()

    def _executor_for(self, cluster: str) -> ThreadPoolExecutor:
        with self._executors_lock:
            if self._closed:
                raise RuntimeError("the Burrow client was closed")
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
        late = f"Burrow did not answer {url} within {limit_s:g}s"
        token = _answer_by.set(time.monotonic() + limit_s)
        try:
            return self._exchange(url, limit_s, late)
        finally:
            _answer_by.reset(token)

    def _exchange(self, url: str, limit_s: float, late: str) -> tuple[int, bytes]:
        try:
            response = self._session.get(url, stream=True, timeout=(limit_s, limit_s),
                                         allow_redirects=False)
        except requests.Timeout as exc:
            raise BurrowUnavailable(late, url) from exc
        except _READ_ERRORS as exc:
            raise BurrowUnavailable(f"cannot reach Burrow at {url}: {_reason(exc)}",
                                    url) from exc
        try:
            status = response.status_code
            if status >= 500:
                raise BurrowUnavailable(f"Burrow answered HTTP {status} for {url}", url)
            return status, self._read_body(response, url)
        except BurrowError:
            raise
        except (urllib3.exceptions.DecodeError, requests.exceptions.ContentDecodingError) as exc:
            raise BurrowResponseError(f"Burrow answered {url} with a body that does not "
                                      f"decode as {response.headers.get('content-encoding')}",
                                      url) from exc
        except _READ_ERRORS as exc:
            if _timed_out(exc):  # requests reports a read timeout as a ConnectionError
                raise BurrowUnavailable(late, url) from exc
            raise BurrowUnavailable(f"Burrow's answer to {url} broke off: {_reason(exc)}",
                                    url) from exc
        finally:
            response.close()  # back to the pool when read to its end, else closed

    def _read_body(self, response: requests.Response, url: str) -> bytes:
        """The body, streamed: its decoded size is checked as it grows (urllib3 decodes at most
        a chunk's worth per read), and every read checks the request's deadline
        (`_DeadlineReads`)."""
        limit = self.settings.max_response_bytes
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in _DECODED:
            raise BurrowResponseError(f"Burrow answered {url} in Content-Encoding {encoding!r}, "
                                      "which was not asked for", url)
        too_large = (f"Burrow's answer to {url} is larger than burrow.maxResponseBytes "
                     f"({limit} bytes decoded); raise it if a group really has that many "
                     "partitions")
        length = response.headers.get("content-length", "")
        if encoding in ("", "identity") and length.isdigit() and int(length) > limit:
            raise BurrowResponseError(too_large, url)
        out = bytearray()
        for piece in response.iter_content(_READ_BYTES):
            out += piece
            if len(out) > limit:
                raise BurrowResponseError(too_large, url)
        return bytes(out)

    def _get_json(self, url: str) -> Any:
        """`_get_json_once`, again after a backoff while Burrow is unavailable (connection
        errors, timeouts, 5xx): `burrow.retries` more times at most, never past the cycle's
        deadline. Backoff: burrow.backoff × 2^(attempt − 1), at most 5 s."""
        # One Retrying per client: tenacity keeps each call's state per thread, and a copy per
        # call would leave a reference cycle per request for the cyclic collector.
        return self._retrying(self._get_json_once, url)

    def _get_json_once(self, url: str) -> Any:
        """The JSON body of a GET."""
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

    def health(self) -> str | None:
        """None when `GET /burrow/admin` answers exactly `GOOD` (every Burrow version does),
        else what happened instead: refused, no answer in time, the HTTP status and body."""
        url = self._base + "/burrow/admin"
        try:
            status, body = self._get(url)
        except BurrowError as exc:
            return str(exc)
        if status == 200 and body.strip() == b"GOOD":
            return None
        excerpt = " ".join(body[:120].decode(errors="replace").split())
        return f"{url} answered HTTP {status}" + (
            f" with {excerpt!r}, not GOOD" if excerpt else " with no body, not GOOD")

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
        return parse.parse_group_lag(body, cluster, group, url, observed)

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        """`/lag` for every group, by at most `concurrency` workers of the cluster's own pool.

        A group that 404s went away between the list and the lag call: it is reported as
        missing (its series disappear). A group whose lag cannot be read, for whatever reason
        (any exception of its request or its parse), is reported failed: one group never costs
        the others or the cycle. A name that is no usable group id is never asked for; it is
        reported rejected.

        Each worker takes the next group until none is left (one task per worker, not one
        future per group). No group is asked once the cycle's deadline has passed or the client
        was closed, and this call stops waiting at the deadline plus a little slack, once.
        """
        names, rejected = usable_group_names(groups)
        deadline = current_deadline()
        pending = collections.deque(names)
        outcomes: dict[str, GroupLags | Exception] = {}

        def work() -> None:
            with cycle_deadline(deadline):
                while not self._closed and not (deadline is not None and deadline.expired()):
                    try:
                        group = pending.popleft()
                    except IndexError:
                        return
                    try:
                        outcomes[group] = self.group_lag(cluster, group)
                    except Exception as exc:  # classified below, per group
                        outcomes[group] = exc

        workers: list[Future[None]] = []
        not_asked = "not asked: the Burrow client was closed"
        try:
            if names:
                executor = self._executor_for(cluster)
                for _ in range(min(max(self.settings.concurrency, 1), len(names))):
                    workers.append(executor.submit(work))
        except RuntimeError as exc:  # the client was closed under the cycle (or Python exits)
            if not self._closed:
                not_asked = f"not asked: {exc}"
        futures_wait(workers, timeout=None if deadline is None
                     else max(deadline.remaining(), 0.0) + _JOIN_SLACK_S)
        pending.clear()  # workers still running past this point ask nothing more
        answered = dict(outcomes)
        late = "no answer from Burrow before the cycle deadline"
        found: list[GroupLags] = []
        missing: list[str] = []
        failed: list[tuple[str, str]] = []
        for group in names:
            outcome = answered.get(group)
            if isinstance(outcome, GroupLags):
                found.append(outcome)
            elif outcome is None:
                failed.append((group, late if workers and not self._closed else not_asked))
            elif isinstance(outcome, BurrowNotFound):
                missing.append(group)
            elif isinstance(outcome, BurrowError):
                failed.append((group, str(outcome)))
            else:  # one group's body must never cost the other groups
                log.debug("cluster=%s group %s: unexpected %s", cluster, escaped(group),
                          type(outcome).__name__,
                          exc_info=None if isinstance(outcome, RecursionError) else outcome)
                failed.append((group, f"unusable answer from Burrow: {type(outcome).__name__}"))
        # A failed group's exception holds its traceback, whose `work` frame holds `outcomes`:
        # a reference cycle that would keep every answer of the cycle alive until the cyclic
        # collector's next middle collection. Cleared, reference counting frees them now.
        outcomes.clear()
        return ClusterLags(cluster, tuple(found), tuple(missing), tuple(failed), tuple(rejected))


class _DeadlineNear(stop_base):
    """tenacity's stop: no attempt is started with (nearly) nothing left of the cycle."""

    def __call__(self, retry_state: RetryCallState) -> bool:
        deadline = current_deadline()
        return deadline is not None and deadline.remaining() < _RETRY_MARGIN_S


class _Backoff(wait_exponential):
    """burrow.backoff × 2^(attempt − 1), at most 5 s, never sleeping past the cycle's
    deadline."""

    def __init__(self, backoff_s: float) -> None:
        super().__init__(multiplier=max(backoff_s, 0.0), max=_MAX_BACKOFF_S)

    def __call__(self, retry_state: RetryCallState) -> float:
        seconds = super().__call__(retry_state)
        deadline = current_deadline()
        return seconds if deadline is None else max(0.0, min(seconds, deadline.remaining()))


def _timed_out(exc: BaseException) -> bool:
    """Whether a timeout is what broke the exchange, however the libraries wrapped it."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, TimeoutError | urllib3.exceptions.TimeoutError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _reason(exc: BaseException) -> str:
    """The innermost cause's type and, for an OS error, its errno text ("Connection refused"):
    never an exception's own text, which may carry the URL or what the server sent."""
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        nxt = cause.__cause__ or cause.__context__
        if nxt is None:
            break
        cause = nxt
    name = type(cause).__name__
    if isinstance(cause, OSError) and isinstance(cause.strerror, str) and cause.strerror:
        return f"{cause.strerror} ({name})"  # the C library's words: "Connection refused"
    return name
