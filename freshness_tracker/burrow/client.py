"""Burrow's REST API over one keep-alive session, with timeouts and bounded retries.

Connection errors, timeouts and 5xx are retried with exponential backoff (tenacity); a 404 is
an answer ("Burrow does not know this"), never retried. Every requests/JSON error is mapped
here to a BurrowError, so the rest of the code never sees a third-party exception.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from tenacity import (
    retry,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from freshness_tracker.burrow import parse
from freshness_tracker.domain.model import ClusterLags, GroupLags
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


class BurrowClient:
    """The calls a cycle needs: health, clusters, servers, consumers, per-group lag."""

    def __init__(self, settings: BurrowSettings, session: requests.Session | None = None) -> None:
        self.settings = settings
        # Credentials in the URL (https://user:pass@burrow) are used as basic auth and removed
        # from the URL, which appears in every error message and log line.
        self._base, url_auth = _split_userinfo(settings.url.rstrip("/"))
        self._session = session or requests.Session()
        # Keep-alive connections for the per-cluster pools of several clusters at once.
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=4 * max(settings.concurrency, 4))
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
        self._get_json: Callable[[str], Any] = retry(
            reraise=True,
            retry=retry_if_exception_type(BurrowUnavailable),
            stop=stop_after_attempt(settings.retries + 1),
            wait=wait_exponential(multiplier=settings.backoff_s, max=5),
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

    def _get(self, url: str) -> requests.Response:
        try:
            response = self._session.get(url, timeout=self.settings.timeout_s,
                                         verify=self._verify)
        except requests.Timeout as exc:
            raise BurrowUnavailable(f"Burrow did not answer {url} within "
                                    f"{self.settings.timeout_s:g}s", url) from exc
        except requests.RequestException as exc:
            raise BurrowUnavailable(f"cannot reach Burrow at {url}: {_reason(exc)}", url) from exc
        if response.status_code >= 500:
            raise BurrowUnavailable(f"Burrow answered HTTP {response.status_code} for {url}", url)
        return response

    def _get_json_once(self, url: str) -> Any:
        response = self._get(url)
        if response.status_code == 404:
            raise BurrowNotFound(f"Burrow does not know {url} (HTTP 404)", url)
        try:
            body = response.json()
        except ValueError as exc:
            excerpt = response.text[:120].replace("\n", " ")
            raise BurrowResponseError(
                f"Burrow answered {url} with HTTP {response.status_code} and a body that is not "
                f"JSON: {excerpt!r}", url) from exc
        if response.status_code != 200:
            raise BurrowResponseError(f"Burrow answered HTTP {response.status_code} for {url}", url)
        if isinstance(body, dict) and body.get("error") is True:
            raise BurrowResponseError(f"Burrow reported an error for {url}", url)
        return body

    # --- API --------------------------------------------------------------------------

    def healthy(self) -> bool:
        """`GET /burrow/admin` answers exactly `GOOD` in every Burrow version."""
        url = self._base + "/burrow/admin"
        try:
            response = self._get(url)
        except BurrowUnavailable:
            return False
        return response.status_code == 200 and response.text.strip() == "GOOD"

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
        return parse.parse_group_lag(self._get_json(url), cluster, group, url)

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        """`/lag` for every group, `concurrency` at a time on the keep-alive session.

        A group that 404s went away between the list and the lag call: it is reported as
        missing (its series disappear). A group whose lag cannot be read is reported failed.
        """
        executor = self._executor_for(cluster)
        futures = {g: executor.submit(self.group_lag, cluster, g) for g in groups}
        found: list[GroupLags] = []
        missing: list[str] = []
        failed: list[tuple[str, str]] = []
        for group, future in futures.items():
            try:
                found.append(future.result())
            except BurrowNotFound:
                missing.append(group)
            except BurrowError as exc:
                failed.append((group, str(exc)))
        return ClusterLags(cluster, tuple(found), tuple(missing), tuple(failed))


def _split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without `user:password@`, (user, password) or None)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    auth = (unquote(parts.username or ""), unquote(parts.password or ""))
    return urlunsplit(parts._replace(netloc=host)), auth


def _reason(exc: requests.RequestException) -> str:
    """The innermost cause, without the credential-bearing URL repr requests sometimes adds."""
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        nxt = cause.__cause__ or cause.__context__
        if nxt is None:
            break
        cause = nxt
    return type(cause).__name__
