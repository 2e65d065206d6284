"""Batched point reads: the timestamp of the record at each requested offset.

Why batched: a lookup is one tiny Fetch, so its cost is round trips. One consumer that assigns a
chunk of partitions of the same leader at their offsets gets all of them answered by a handful of
Fetch requests to that broker (about two per batch), instead of one or more round trips per
partition: 4-25x faster than one partition at a time on Kafka 3.9 and 4.1, 1 and 3 brokers, at
0-1 ms added RTT (docs/performance.md).

Per batch the state machine is:

- assign every partition at its smallest requested offset (C-1 and C share one assignment);
- consume in small chunks; an exact offset is FOUND, a later record first means the requested
  ones before it do not exist (GAP), partition EOF means nothing at or after them (END);
- `auto.offset.reset=error` turns "offset below the log start" into an error event: we then ask
  for the watermarks and re-read from the log start, answering OUT_OF_RANGE (data loss) with the
  earliest retained record instead of silently measuring a different record;
- a partition leaves the assignment as soon as it is answered, so its later batches are never
  fetched (records can be megabytes);
- whatever is left at the batch deadline is FAILED with the reason.

Every request gets exactly one RecordRead; only "no broker reachable at all" raises.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import CancelledError, Executor, Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaException,
    TopicPartition,
)
from confluent_kafka import KafkaError as _RdKafkaError

from freshness_tracker.deadline import Deadline, bound, cycle_deadline
from freshness_tracker.deadline import current as current_deadline
from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.errors import ClusterUnavailable
from freshness_tracker.kafka.consumers import ConsumerPool, LookupConsumer
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = ["KafkaRecordReader", "timestamp_of"]

logger = logging.getLogger(__name__)

_ERR_PARTITION_EOF: int = _RdKafkaError._PARTITION_EOF
_ERR_AUTO_OFFSET_RESET: int = _RdKafkaError._AUTO_OFFSET_RESET

_TIMESTAMP_TYPES: dict[int, str] = {
    TIMESTAMP_CREATE_TIME: "CreateTime",
    TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime",
}

#: How often one partition may answer "out of range" in one batch before we give up on it
#: (retention racing our re-read, or a broker contradicting its own watermarks).
_MAX_RESETS = 3

_NO_TIMESTAMP = "record has no timestamp"

#: Requests on one partition this close to the last record are reached by reading on; farther
#: ones (other groups far ahead) get their own seek instead of reading through the records in
#: between, which can be millions of records, megabytes each.
_READ_THROUGH_MAX = 16

#: How long one consumer's list_topics() answer is trusted for _warm_up (librdkafka's metadata
#: cache entries live metadata.max.age.ms, 900 s by default).
_METADATA_REUSE_S = 300.0

#: How long read() waits for its workers past the cycle deadline before it answers the rest
#: as failed (a batch stops at the deadline on its own; this covers a client call that ignores
#: its timeout, which then cannot hold the cycle).
_JOIN_SLACK_S = 2.0

_DEADLINE_REACHED = "not read: the cycle deadline was reached first"

_PartKey = tuple[str, int]


def timestamp_of(message: Any) -> tuple[int | None, str | None]:
    """(timestamp_ms, type name) of a consumed message; (None, None) when it carries none."""
    ts_type, ts = message.timestamp()
    if ts_type not in _TIMESTAMP_TYPES or ts is None or ts < 0:
        return None, None
    return int(ts), _TIMESTAMP_TYPES[ts_type]


@dataclass(slots=True)
class _Wanted:
    """One request still waiting for its answer; `index` is its position in read()'s input."""

    index: int
    request: ReadRequest

    @property
    def offset(self) -> int:
        return self.request.offset


@dataclass(slots=True)
class _PartitionTask:
    """Everything one batch still wants from one partition."""

    topic: str
    partition: int
    wanted: list[_Wanted]  # sorted by offset, unanswered
    below_start: list[_Wanted] = field(default_factory=list)  # OUT_OF_RANGE, awaiting a record
    log_start: int | None = None  # known once the broker said "out of range"
    log_end: int | None = None
    assigned_at: int = 0
    resets: int = 0
    last_error: str | None = None

    @property
    def key(self) -> _PartKey:
        return (self.topic, self.partition)

    @property
    def done(self) -> bool:
        return not self.wanted and not self.below_start

    def start_offset(self) -> int:
        """Where to (re)assign: the log start if we are after the earliest record."""
        if self.below_start and self.log_start is not None:
            return self.log_start
        return self.wanted[0].offset

    def topic_partition(self, offset: int | None = None) -> Any:
        if offset is None:
            return TopicPartition(self.topic, self.partition)
        return TopicPartition(self.topic, self.partition, offset)


_Answer = tuple[int, RecordRead]


class _BatchRun:
    """Reads one batch of partitions (same leader) with one consumer until done or deadline.

    `run()` never raises: a consumer that fails mid-batch fails the rest of the batch and sets
    `broken` so the caller can have the pool replace it.
    """

    def __init__(
        self,
        consumer: LookupConsumer,
        tasks: Sequence[_PartitionTask],
        *,
        timeout_s: float,
        consume_batch: int,
        poll_timeout_s: float,
        clock: Callable[[], float],
        client_error: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._consumer = consumer
        self._pool_error = client_error
        self._tasks: dict[_PartKey, _PartitionTask] = {t.key: t for t in tasks}
        self._timeout_s = timeout_s
        self._consume_batch = consume_batch
        self._poll_timeout_s = poll_timeout_s
        self._clock = clock
        self._deadline = clock() + timeout_s
        self._answers: list[_Answer] = []
        self._assigned: set[_PartKey] = set()
        self._finished: list[_PartitionTask] = []
        self._client_error: str | None = None
        self.broken = False

    # --- driver ---------------------------------------------------------------------------

    def run(self) -> list[_Answer]:
        try:
            self._assign(list(self._tasks.values()))
            while self._tasks:
                # One reading of the clock: checking `_remaining() > 0` and then computing the
                # timeout from a second reading let a negative timeout through, and librdkafka
                # reads a negative timeout as "block forever" (a wedged cycle, issue 9).
                remaining = self._remaining()
                if remaining <= 0:
                    break
                timeout = min(remaining, self._poll_timeout_s)
                for message in self._consumer.consume(self._consume_batch, timeout):
                    self._handle(message)
                    if self.broken:
                        break
                self._drop_finished()
                if self.broken:
                    break
        except Exception as exc:
            logger.warning("lookup consumer failed mid-batch: %s", exc)
            self.broken = True
            self._client_error = f"lookup consumer failed: {exc}"
        self._expire_leftovers()
        return self._answers

    def _remaining(self) -> float:
        return self._deadline - self._clock()

    def _assign(self, tasks: list[_PartitionTask]) -> None:
        partitions = []
        for task in tasks:
            task.assigned_at = task.start_offset()
            partitions.append(task.topic_partition(task.assigned_at))
            self._assigned.add(task.key)
        if partitions:
            self._consumer.incremental_assign(partitions)

    def _unassign(self, tasks: Iterable[_PartitionTask]) -> None:
        keys = [t.key for t in tasks if t.key in self._assigned]
        if keys:
            self._consumer.incremental_unassign([TopicPartition(t, p) for t, p in keys])
            self._assigned.difference_update(keys)

    def _drop_finished(self) -> None:
        """Stop fetching answered partitions at once: their later batches are wasted bytes."""
        if self._finished:
            finished, self._finished = self._finished, []
            self._unassign(finished)

    def _finish(self, task: _PartitionTask) -> None:
        if self._tasks.pop(task.key, None) is not None:
            self._finished.append(task)

    # --- events ---------------------------------------------------------------------------

    def _handle(self, message: Any) -> None:
        err = message.error()
        task = self._tasks.get((message.topic(), message.partition()))
        if err is None:
            if task is not None:
                self._on_record(task, message)
            return
        code = err.code()
        if code == _ERR_PARTITION_EOF:
            if task is not None:
                self._on_eof(task, message.offset())
        elif code == _ERR_AUTO_OFFSET_RESET:
            if task is not None:
                self._on_out_of_range(task)
        elif task is not None:
            self._on_partition_error(task, err)
        else:
            self._on_client_error(err)

    def _on_record(self, task: _PartitionTask, message: Any) -> None:
        offset: int = message.offset()
        if offset < task.assigned_at:
            return  # already returned by consume() before we moved this partition on
        ts, ts_type = timestamp_of(message)
        if task.below_start and task.log_start is not None and offset >= task.log_start:
            for wanted in task.below_start:
                self._answer_out_of_range(wanted, task, offset, ts, ts_type)
            task.below_start.clear()
        while task.wanted and task.wanted[0].offset <= offset:
            wanted = task.wanted.pop(0)
            outcome = ReadOutcome.FOUND if wanted.offset == offset else ReadOutcome.GAP
            self._answer_record(wanted, outcome, offset, ts, ts_type)
        if task.done:
            self._finish(task)
        elif not task.below_start and task.wanted[0].offset - offset > _READ_THROUGH_MAX:
            self._reposition(task)

    def _reposition(self, task: _PartitionTask) -> None:
        """Seek straight to the next wanted offset of a partition (see _READ_THROUGH_MAX)."""
        self._unassign([task])
        self._assign([task])

    def _on_eof(self, task: _PartitionTask, eof_offset: int) -> None:
        """Nothing at or after the fetch position: every open request ends there."""
        if eof_offset < task.assigned_at:
            return  # left over from an earlier assignment of this partition
        for wanted in task.wanted:
            self._answer(wanted, ReadOutcome.END, log_end_offset=eof_offset)
        for wanted in task.below_start:
            self._answer(
                wanted,
                ReadOutcome.OUT_OF_RANGE,
                log_start_offset=task.log_start,
                log_end_offset=eof_offset,
                error="no retained record: the log is empty",
            )
        task.wanted.clear()
        task.below_start.clear()
        self._finish(task)

    def _on_out_of_range(self, task: _PartitionTask) -> None:
        """The offset is not in the log: find out where the log starts and ends, then re-read."""
        task.resets += 1
        watermarks = self._watermarks(task)
        if watermarks is None:
            return
        low, high = watermarks
        if task.resets > _MAX_RESETS:
            self._fail_task(task, f"offset out of range {task.resets} times (log {low}..{high})")
            return
        task.log_start, task.log_end = low, high
        task.below_start.extend(w for w in task.wanted if w.offset < low)
        for wanted in (w for w in task.wanted if w.offset >= high):
            beyond = f"offset is beyond the log end {high}" if wanted.offset > high else None
            self._answer(wanted, ReadOutcome.END, log_end_offset=high, error=beyond)
        task.wanted = [w for w in task.wanted if low <= w.offset < high]
        if task.done:
            self._finish(task)
            return
        self._reposition(task)

    def _watermarks(self, task: _PartitionTask) -> tuple[int, int] | None:
        timeout = max(0.1, min(self._remaining(), 5.0))
        try:
            watermarks = self._consumer.get_watermark_offsets(
                task.topic_partition(), timeout=timeout, cached=False
            )
        except Exception as exc:
            self._fail_task(task, f"offset out of range; log start unknown: {exc}")
            return None
        low, high = watermarks
        return int(low), int(high)

    def _on_partition_error(self, task: _PartitionTask, err: Any) -> None:
        text = str(err.str())
        task.last_error = text
        if not err.retriable():
            self._fail_task(task, text)

    def _on_client_error(self, err: Any) -> None:
        self._client_error = str(err.str())
        if err.fatal():
            logger.error("lookup consumer fatal error: %s", self._client_error)
            self.broken = True

    # --- answers --------------------------------------------------------------------------

    def _answer(self, wanted: _Wanted, outcome: ReadOutcome, **fields: Any) -> None:
        self._answers.append((wanted.index, RecordRead(wanted.request, outcome, **fields)))

    def _answer_record(
        self,
        wanted: _Wanted,
        outcome: ReadOutcome,
        offset: int,
        ts: int | None,
        ts_type: str | None,
    ) -> None:
        if ts is None:
            self._answer(wanted, ReadOutcome.FAILED, offset=offset, error=_NO_TIMESTAMP)
            return
        self._answer(wanted, outcome, offset=offset, timestamp_ms=ts, timestamp_type=ts_type)

    def _answer_out_of_range(
        self,
        wanted: _Wanted,
        task: _PartitionTask,
        offset: int,
        ts: int | None,
        ts_type: str | None,
    ) -> None:
        """Data loss: report where the log starts now and the earliest record still there."""
        self._answer(
            wanted,
            ReadOutcome.OUT_OF_RANGE,
            log_start_offset=task.log_start,
            log_end_offset=task.log_end,
            offset=offset,
            timestamp_ms=ts,
            timestamp_type=ts_type,
            error=None if ts is not None else _NO_TIMESTAMP,
        )

    def _fail_task(self, task: _PartitionTask, error: str) -> None:
        for wanted in task.wanted:
            self._answer(wanted, ReadOutcome.FAILED, error=error)
        for wanted in task.below_start:
            self._answer(
                wanted,
                ReadOutcome.OUT_OF_RANGE,
                log_start_offset=task.log_start,
                log_end_offset=task.log_end,
                error=f"earliest retained record not read: {error}",
            )
        task.wanted.clear()
        task.below_start.clear()
        self._finish(task)

    def _expire_leftovers(self) -> None:
        """Deadline (or a broken consumer): answer whatever is still open with the reason."""
        for task in list(self._tasks.values()):
            self._fail_task(task, self._leftover_reason(task))
        self._finished.clear()

    def _leftover_reason(self, task: _PartitionTask) -> str:
        if self.broken and self._client_error:
            return self._client_error
        first = task.wanted[0].offset if task.wanted else task.log_start
        reason = f"timed out after {self._timeout_s:g} s waiting for offset {first}"
        client_error = self._client_error or self._pool_error()
        details = [d for d in (task.last_error, client_error) if d]
        details.extend(self._cached_watermark_hint(task))
        if details:
            reason += " (" + "; ".join(details) + ")"
        return reason

    def _cached_watermark_hint(self, task: _PartitionTask) -> list[str]:
        """The log end from the last fetch response, when librdkafka has one (no request)."""
        if self.broken:
            return []
        try:
            watermarks = self._consumer.get_watermark_offsets(task.topic_partition(), cached=True)
        except Exception:
            return []
        if not watermarks or watermarks[1] < 0:
            return []
        return [f"log end per last fetch: {watermarks[1]}"]


class _BatchQueue:
    """Batches waiting for a worker; workers pop until it is empty."""

    def __init__(self, batches: Iterable[list[_PartitionTask]]) -> None:
        self._batches = deque(batches)
        self._lock = threading.Lock()

    def pop(self) -> list[_PartitionTask] | None:
        with self._lock:
            return self._batches.popleft() if self._batches else None

    def close(self) -> None:
        """Abandon what no worker has started: read() has stopped waiting for it."""
        with self._lock:
            self._batches.clear()


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
        metadata = self._metadata(deadline)
        batches, answers = self._plan(requests, metadata)
        answers.extend(self._run_batches(batches, deadline))
        late = deadline is not None and deadline.expired()
        results = self._assemble(requests, answers,
                                 _DEADLINE_REACHED if late else "lookup not run (shutting down "
                                                                "or crashed)")
        self._count(results, len(batches))
        return results

    def stats(self) -> dict[str, int]:
        """Cumulative counters: reads, batches, fetch_requests, failures and per outcome."""
        with self._lock:
            counters = dict(self._counters)
        counters.setdefault("reads", 0)
        counters.setdefault("batches", 0)
        counters.setdefault("failures", 0)
        counters["fetch_requests"] = self._pool.fetch_requests()
        return counters

    # --- metadata and planning ------------------------------------------------------------

    def _metadata(self, deadline: Deadline | None) -> Any:
        """All topics' metadata, once per call: the first lookup in a topic costs ~1 s otherwise.

        A metadata failure means the cluster is down, not the consumer: it stays in the pool.
        """
        timeout = bound(self._lookup.timeout_s, deadline)
        error: Exception
        if timeout <= 0:
            raise ClusterUnavailable(f"cluster {self.cluster}: {_DEADLINE_REACHED}")
        try:
            with self._pool.borrow(timeout=timeout) as consumer:
                try:
                    metadata = consumer.list_topics(timeout=timeout)
                except KafkaException as exc:
                    error = exc
                else:
                    self._remember_topics(consumer, metadata)
                    return metadata
        except Exception as exc:  # no consumer could be created or borrowed
            error = exc
        servers = self._pool.bootstrap_servers or "(no bootstrap.servers)"
        raise ClusterUnavailable(
            f"cluster {self.cluster}: no broker reachable at {servers}: {error}"
        ) from error

    def _plan(
        self, requests: Sequence[ReadRequest], metadata: Any
    ) -> tuple[list[list[_PartitionTask]], list[_Answer]]:
        """Group requests by partition, partitions by leader, cut leader groups into batches."""
        answers: list[_Answer] = []
        by_partition: dict[_PartKey, list[_Wanted]] = defaultdict(list)
        for index, request in enumerate(requests):
            problem = self._invalid(request)
            if problem:
                answers.append((index, RecordRead(request, ReadOutcome.FAILED, error=problem)))
            else:
                by_partition[(request.topic, request.partition)].append(_Wanted(index, request))
        by_leader: dict[int, list[_PartitionTask]] = defaultdict(list)
        for (topic, partition), wanted in by_partition.items():
            leader, problem = _leader_of(metadata, topic, partition)
            if problem:
                answers.extend(
                    (w.index, RecordRead(w.request, ReadOutcome.FAILED, error=problem))
                    for w in wanted
                )
                continue
            wanted.sort(key=lambda w: w.offset)
            by_leader[leader].append(_PartitionTask(topic, partition, wanted))
        return self._cut(by_leader), answers

    def _invalid(self, request: ReadRequest) -> str | None:
        if request.cluster != self.cluster:
            return f"request for cluster {request.cluster} sent to the reader of {self.cluster}"
        if request.offset < 0:
            return f"invalid offset {request.offset}"
        return None

    def _cut(self, by_leader: dict[int, list[_PartitionTask]]) -> list[list[_PartitionTask]]:
        """Batches of up to batch_size partitions per leader, leaders interleaved so parallel
        workers talk to different brokers."""
        size = self._lookup.batch_size
        per_leader = [
            [tasks[i : i + size] for i in range(0, len(tasks), size)]
            for _, tasks in sorted(by_leader.items())
        ]
        interleaved = itertools.zip_longest(*per_leader)
        return [batch for round_ in interleaved for batch in round_ if batch]

    # --- execution ------------------------------------------------------------------------

    def _run_batches(
        self, batches: list[list[_PartitionTask]], deadline: Deadline | None
    ) -> list[_Answer]:
        """One worker per pool consumer drains the batches; whatever no worker answered
        (executor shut down, the cycle deadline, a bug) is failed by _assemble()."""
        if not batches:
            return []
        todo = _BatchQueue(batches)
        futures: list[Future[list[_Answer]]] = []
        for _ in range(min(self._pool.size, len(batches))):
            try:
                futures.append(self._executor.submit(self._drain, todo, deadline))
            except RuntimeError as exc:  # the executor is shutting down
                logger.info("cluster %s: lookups not started: %s", self.cluster, exc)
                break
        answers: list[_Answer] = []
        for future in futures:
            wait = None if deadline is None else max(deadline.remaining(), 0.0) + _JOIN_SLACK_S
            try:
                answers.extend(future.result(timeout=wait))
            except TimeoutError:
                todo.close()
                logger.warning("cluster %s: a lookup worker is still busy %.0f s past the cycle "
                               "deadline; its partitions are answered as failed", self.cluster,
                               _JOIN_SLACK_S)
            except CancelledError:
                logger.info("cluster %s: lookups cancelled (shutting down)", self.cluster)
            except Exception:
                logger.exception("cluster %s: lookup worker crashed", self.cluster)
        return answers

    def _drain(self, todo: _BatchQueue, deadline: Deadline | None) -> list[_Answer]:
        answers: list[_Answer] = []
        while (batch := todo.pop()) is not None:
            answers.extend(self._run_batch(batch, deadline))
        return answers

    def _remember_topics(self, consumer: LookupConsumer, metadata: Any) -> None:
        with self._lock:
            if len(self._known_topics) > 4 * self._pool.size:  # replaced consumers' entries
                self._known_topics.clear()
            self._known_topics[id(consumer)] = (self._clock(), frozenset(metadata.topics))

    def _warm_up(self, consumer: LookupConsumer, batch: list[_PartitionTask]) -> None:
        """Give a consumer metadata for the batch's topics before assigning them.

        A consumer assigned a topic its client has never seen first waits for librdkafka's own
        metadata request; `read()` fetches metadata on one consumer only. On the project's
        earlier test broker (tansu) that wait was ~1 s (a second consumer's first batch in a new
        topic took ~1 s instead of ~0.1 s and bounded the whole read); on Kafka 4.1 it was
        within noise (4,000 lookups over 20 new topics: 0.72-1.39 s with, 1.09-1.22 s without,
        4 alternating runs on a loaded machine), so this is cheap insurance. One
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

    def _run_batch(self, batch: list[_PartitionTask], deadline: Deadline | None) -> list[_Answer]:
        if bound(self._lookup.timeout_s, deadline) <= 0:
            return _fail_batch(batch, _DEADLINE_REACHED)
        try:
            with self._pool.borrow(timeout=bound(self._lookup.timeout_s, deadline)) as consumer:
                with cycle_deadline(deadline):
                    self._warm_up(consumer, batch)
                timeout_s = bound(self._lookup.timeout_s, deadline)
                if timeout_s <= 0:
                    return _fail_batch(batch, _DEADLINE_REACHED)
                run = _BatchRun(
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
            return _fail_batch(batch, f"lookup failed: {exc}")

    # --- results --------------------------------------------------------------------------

    def _assemble(
        self, requests: Sequence[ReadRequest], answers: list[_Answer], missing: str
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


def _fail_batch(batch: list[_PartitionTask], error: str) -> list[_Answer]:
    return [
        (w.index, RecordRead(w.request, ReadOutcome.FAILED, error=error))
        for task in batch
        for w in (*task.wanted, *task.below_start)
    ]


def _leader_of(metadata: Any, topic: str, partition: int) -> tuple[int, str | None]:
    """The partition's leader id, or a reason why it cannot be read."""
    topic_meta = metadata.topics.get(topic)
    if topic_meta is None:
        return -1, f"unknown topic {topic}"
    if topic_meta.error is not None:
        return -1, f"topic {topic}: {topic_meta.error.str()}"
    part_meta = topic_meta.partitions.get(partition)
    if part_meta is None:
        return -1, f"unknown partition {topic}[{partition}]"
    if part_meta.leader is None or part_meta.leader < 0:
        return -1, f"{topic}[{partition}] has no leader"
    return int(part_meta.leader), None
