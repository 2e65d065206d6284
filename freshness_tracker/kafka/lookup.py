"""`KafkaRecordReader`: the timestamp of the record at each requested offset, in batches.

Why batched: a lookup is one tiny Fetch, so its cost is round trips. One consumer that assigns a
chunk of partitions of the same leader at their offsets gets all of them answered by a handful of
Fetch requests to that broker (about two per batch), instead of one or more round trips per
partition: several times faster than one partition at a time (docs/performance.md).

Here: metadata once per read (`kafka/metadata.py`), leader batches (`domain/batching.py`), then
one worker per pool consumer drains the batches, each run by the state machine in
`kafka/batch.py`. Every request gets exactly one RecordRead; only "no broker reachable at all"
raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Executor, Future
from typing import Any

from freshness_tracker.deadline import Deadline, bound, cycle_deadline
from freshness_tracker.deadline import current as current_deadline
from freshness_tracker.domain.batching import leader_batches
from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.errors import ClusterUnavailable
from freshness_tracker.kafka.batch import Answer, BatchRun, PartitionTask, Wanted, fail_batch
from freshness_tracker.kafka.consumers import ConsumerPool, LookupConsumer
from freshness_tracker.kafka.metadata import cluster_metadata, leader_of
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = ["KafkaRecordReader"]

logger = logging.getLogger(__name__)

#: How long one consumer's list_topics() answer is trusted for _warm_up (librdkafka's metadata
#: cache entries live metadata.max.age.ms, 900 s by default).
_METADATA_REUSE_S = 300.0

#: How long read() waits for its workers past the cycle deadline before it answers the rest
#: as failed (a batch stops at the deadline on its own; this covers a client call that ignores
#: its timeout, which then cannot hold the cycle).
_JOIN_SLACK_S = 2.0

_DEADLINE_REACHED = "not read: the cycle deadline was reached first"

_PartKey = tuple[str, int]


class KafkaRecordReader:
    """`RecordReader` for one cluster: batched point reads on the shared executor.

    At most `pool.size` batches of this cluster run at once (one worker per consumer), so a big
    cluster cannot hold every thread of the shared executor while it waits for consumers.
    `read()` blocks on the executor: never call it from one of that executor's own threads.
    """

    def __init__(
        self,
        settings: ClusterKafkaSettings,
        lookup: LookupSettings,
        pool: ConsumerPool,
        executor: Executor,
        *,
        consume_batch: int = 16,
        poll_timeout_s: float = 0.02,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if lookup.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {lookup.batch_size}")
        self._settings = settings
        self._lookup = lookup
        self._pool = pool
        self._executor = executor
        self._consume_batch = max(1, consume_batch)
        self._poll_timeout_s = poll_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._counters: dict[str, int] = defaultdict(int)
        # id(consumer) -> (when, the topics its client then had metadata for); see _warm_up
        self._known_topics: dict[int, tuple[float, frozenset[str]]] = {}

    @property
    def cluster(self) -> str:
        return self._settings.name

    # --- RecordReader ---------------------------------------------------------------------

    def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]:
        """One RecordRead per request, in request order.

        Raises `ClusterUnavailable` only when the cluster's metadata cannot be fetched at all.
        """
        if not requests:
            return []
        deadline = current_deadline()
        # All topics' metadata, once per call: otherwise the first lookup in a topic waits for
        # librdkafka's own metadata request.
        timeout = bound(self._lookup.timeout_s, deadline)
        if timeout <= 0:
            raise ClusterUnavailable(f"cluster {self.cluster}: {_DEADLINE_REACHED}")
        metadata = cluster_metadata(self._pool, self.cluster, timeout, seen=self._remember_topics)
        batches, answers = self._plan(requests, metadata)
        answers.extend(self._run_batches(batches, deadline))
        late = deadline is not None and deadline.expired()
        results = self._assemble(requests, answers,
                                 _DEADLINE_REACHED if late else "lookup not run (shutting down "
                                                                "or crashed)")
        self._count(results, len(batches))
        return results

    def confirm_reachable(self, topic: str | None = None) -> None:
        """Raise `ClusterUnavailable` unless a broker answers one metadata request now.

        A cycle whose every answer comes from the timestamp cache sends no read, and Burrow
        keeps answering with its last offsets when the brokers stop: without this, a cluster
        with no broker left would still look measured. librdkafka sends an application's
        metadata request to a connected broker (never answers it from its cache), and `topic`
        keeps the answer to one topic's partitions however large the cluster.
        """
        timeout = bound(self._lookup.timeout_s, current_deadline())
        if timeout <= 0:
            raise ClusterUnavailable(f"cluster {self.cluster}: {_DEADLINE_REACHED}")
        cluster_metadata(self._pool, self.cluster, timeout, topic=topic)

    def stats(self) -> dict[str, int]:
        """Cumulative counters: reads, batches, fetch_requests, failures and per outcome."""
        with self._lock:
            counters = {"reads": 0, "batches": 0, "failures": 0, **self._counters}
        counters["fetch_requests"] = self._pool.fetch_requests()
        return counters

    # --- metadata and planning ------------------------------------------------------------

    def _plan(
        self, requests: Sequence[ReadRequest], metadata: Any
    ) -> tuple[list[list[PartitionTask]], list[Answer]]:
        """Group requests by partition, partitions by leader, cut leader groups into batches."""
        answers: list[Answer] = []
        by_partition: dict[_PartKey, list[Wanted]] = defaultdict(list)
        for index, request in enumerate(requests):
            problem = self._invalid(request)
            if problem:
                answers.append((index, RecordRead(request, ReadOutcome.FAILED, error=problem)))
            else:
                by_partition[(request.topic, request.partition)].append(Wanted(index, request))
        by_leader: dict[int, list[PartitionTask]] = defaultdict(list)
        for (topic, partition), wanted in by_partition.items():
            leader, problem = leader_of(metadata, topic, partition)
            if problem:
                answers.extend(
                    (w.index, RecordRead(w.request, ReadOutcome.FAILED, error=problem))
                    for w in wanted
                )
                continue
            wanted.sort(key=lambda w: w.offset)
            by_leader[leader].append(PartitionTask(topic, partition, wanted))
        return leader_batches(by_leader, self._lookup.batch_size), answers

    def _invalid(self, request: ReadRequest) -> str | None:
        if request.cluster != self.cluster:
            return f"request for cluster {request.cluster} sent to the reader of {self.cluster}"
        if request.offset < 0:
            return f"invalid offset {request.offset}"
        return None

    # --- execution ------------------------------------------------------------------------

    def _run_batches(
        self, batches: list[list[PartitionTask]], deadline: Deadline | None
    ) -> list[Answer]:
        """One worker per pool consumer drains the batches; whatever no worker answered
        (executor shut down, the cycle deadline, a bug) is failed by _assemble()."""
        todo = deque(batches)  # shared by the workers unlocked: a deque's pops are atomic
        futures: list[Future[list[Answer]]] = []
        for _ in range(min(self._pool.size, len(batches))):
            try:
                futures.append(self._executor.submit(self._drain, todo, deadline))
            except RuntimeError as exc:  # the executor is shutting down
                logger.info("cluster %s: lookups not started: %s", self.cluster, exc)
                break
        answers: list[Answer] = []
        for future in futures:
            wait = None if deadline is None else max(deadline.remaining(), 0.0) + _JOIN_SLACK_S
            try:
                answers.extend(future.result(timeout=wait))
            except TimeoutError:
                todo.clear()  # abandon what no worker has started: read() stops waiting
                logger.warning("cluster %s: a lookup worker is still busy %.0f s past the cycle "
                               "deadline; its partitions are answered as failed", self.cluster,
                               _JOIN_SLACK_S)
            except CancelledError:
                logger.info("cluster %s: lookups cancelled (shutting down)", self.cluster)
            except Exception:
                logger.exception("cluster %s: lookup worker crashed", self.cluster)
        return answers

    def _drain(self, todo: deque[list[PartitionTask]], deadline: Deadline | None
               ) -> list[Answer]:
        answers: list[Answer] = []
        while True:
            try:
                batch = todo.popleft()
            except IndexError:  # another worker took the last one
                return answers
            answers.extend(self._run_batch(batch, deadline))

    def _remember_topics(self, consumer: LookupConsumer, metadata: Any) -> None:
        with self._lock:
            if len(self._known_topics) > 4 * self._pool.size:  # replaced consumers' entries
                self._known_topics.clear()
            self._known_topics[id(consumer)] = (self._clock(), frozenset(metadata.topics))

    def _warm_up(self, consumer: LookupConsumer, batch: list[PartitionTask]) -> None:
        """Give a consumer metadata for the batch's topics before assigning them.

        A consumer assigned a topic its client has never seen first waits for librdkafka's own
        metadata request; `read()` fetches metadata on one consumer only. Some brokers make that
        wait long enough to bound the whole read; on Kafka it is within noise, so this is cheap
        insurance. One
        `list_topics()` covers every topic, so a consumer pays it when a batch has a topic it has
        not seen, or every _METADATA_REUSE_S (librdkafka's cache entries expire), not per batch.
        A failure here is not fatal: the batch then waits for librdkafka's own metadata request.
        """
        with self._lock:
            when, known = self._known_topics.get(id(consumer), (0.0, frozenset()))
        fresh = self._clock() - when < _METADATA_REUSE_S
        if fresh and all(task.topic in known for task in batch):
            return
        timeout = bound(min(self._lookup.timeout_s, 5.0))
        if timeout <= 0:
            return
        try:
            metadata = consumer.list_topics(timeout=timeout)
        except Exception as exc:
            logger.debug("cluster %s: metadata warm-up failed: %s", self.cluster, exc)
            return
        self._remember_topics(consumer, metadata)

    def _run_batch(self, batch: list[PartitionTask], deadline: Deadline | None) -> list[Answer]:
        if bound(self._lookup.timeout_s, deadline) <= 0:
            return fail_batch(batch, _DEADLINE_REACHED)
        try:
            with self._pool.borrow(timeout=bound(self._lookup.timeout_s, deadline)) as consumer:
                with cycle_deadline(deadline):
                    self._warm_up(consumer, batch)
                timeout_s = bound(self._lookup.timeout_s, deadline)
                if timeout_s <= 0:
                    return fail_batch(batch, _DEADLINE_REACHED)
                run = BatchRun(
                    consumer,
                    batch,
                    timeout_s=timeout_s,
                    consume_batch=self._consume_batch,
                    poll_timeout_s=self._poll_timeout_s,
                    clock=self._clock,
                    client_error=lambda: self._pool.last_error(consumer),
                )
                answers = run.run()
                if run.broken:
                    self._pool.discard(consumer)
                return answers
        except Exception as exc:
            logger.warning("cluster %s: lookup batch failed: %s", self.cluster, exc)
            return fail_batch(batch, f"lookup failed: {exc}")

    # --- results --------------------------------------------------------------------------

    def _assemble(
        self, requests: Sequence[ReadRequest], answers: list[Answer], missing: str
    ) -> list[RecordRead]:
        """Exactly one RecordRead per request, whatever went wrong on the way (`missing`: why
        a request has no answer)."""
        results: list[RecordRead | None] = [None] * len(requests)
        for index, read in answers:
            if results[index] is None:
                results[index] = read
        return [
            read if read is not None else RecordRead(requests[i], ReadOutcome.FAILED, error=missing)
            for i, read in enumerate(results)
        ]

    def _count(self, results: list[RecordRead], batches: int) -> None:
        with self._lock:
            self._counters["reads"] += len(results)
            self._counters["batches"] += batches
            for read in results:
                self._counters[str(read.outcome)] += 1
                if read.outcome is ReadOutcome.FAILED:
                    self._counters["failures"] += 1
