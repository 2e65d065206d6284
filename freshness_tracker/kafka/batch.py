"""One batch of point reads on one consumer: the state machine over librdkafka's events.

A batch is up to `lookup.batchSize` partitions of one leader (`domain/batching.py`); the reader
that fans batches out over the pool is `kafka/lookup.py`. Per batch:

- assign every partition at its smallest requested offset (C-1 and C share one assignment);
- consume in small chunks; an exact offset is FOUND, a later record first means the requested
  ones before it do not exist (GAP), partition EOF means nothing at or after them (END);
- `auto.offset.reset=error` turns "offset below the log start" into an error event: we then ask
  for the watermarks and re-read from the log start, answering OUT_OF_RANGE (data loss) with the
  earliest retained record instead of silently measuring a different record;
- a partition leaves the assignment as soon as it is answered, so its later batches are never
  fetched (records can be megabytes);
- whatever is left at the batch deadline is FAILED with the reason.

`BatchRun.run()` never raises: every request of the batch gets exactly one answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TopicPartition,
)
from confluent_kafka import KafkaError as _RdKafkaError

from freshness_tracker.domain.model import ReadOutcome, ReadRequest, RecordRead
from freshness_tracker.kafka.consumers import LookupConsumer

__all__ = ["Answer", "BatchRun", "PartitionTask", "Wanted", "fail_batch", "timestamp_of"]

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

_PartKey = tuple[str, int]


def timestamp_of(message: Any) -> tuple[int | None, str | None]:
    """(timestamp_ms, type name) of a consumed message; (None, None) when it carries none."""
    ts_type, ts = message.timestamp()
    if ts_type not in _TIMESTAMP_TYPES or ts is None or ts < 0:
        return None, None
    return int(ts), _TIMESTAMP_TYPES[ts_type]


@dataclass(slots=True)
class Wanted:
    """One request still waiting for its answer; `index` is its position in read()'s input."""

    index: int
    request: ReadRequest

    @property
    def offset(self) -> int:
        return self.request.offset


@dataclass(slots=True)
class PartitionTask:
    """Everything one batch still wants from one partition."""

    topic: str
    partition: int
    wanted: list[Wanted]  # sorted by offset, unanswered
    below_start: list[Wanted] = field(default_factory=list)  # OUT_OF_RANGE, awaiting a record
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


Answer = tuple[int, RecordRead]


class BatchRun:
    """Reads one batch of partitions (same leader) with one consumer until done or deadline.

    `run()` never raises: a consumer that fails mid-batch fails the rest of the batch and sets
    `broken` so the caller can have the pool replace it.
    """

    def __init__(
        self,
        consumer: LookupConsumer,
        tasks: Sequence[PartitionTask],
        *,
        timeout_s: float,
        consume_batch: int,
        poll_timeout_s: float,
        clock: Callable[[], float],
        client_error: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._consumer = consumer
        self._pool_error = client_error
        self._tasks: dict[_PartKey, PartitionTask] = {t.key: t for t in tasks}
        self._timeout_s = timeout_s
        self._consume_batch = consume_batch
        self._poll_timeout_s = poll_timeout_s
        self._clock = clock
        self._deadline = clock() + timeout_s
        self._answers: list[Answer] = []
        self._assigned: set[_PartKey] = set()
        self._finished: list[PartitionTask] = []
        self._client_error: str | None = None
        self.broken = False

    # --- driver ---------------------------------------------------------------------------

    def run(self) -> list[Answer]:
        try:
            self._assign(list(self._tasks.values()))
            while self._tasks:
                # One reading of the clock: checking `_remaining() > 0` and then computing the
                # timeout from a second reading let a negative timeout through, and librdkafka
                # reads a negative timeout as "block forever" (a wedged cycle).
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

    def _assign(self, tasks: list[PartitionTask]) -> None:
        partitions = []
        for task in tasks:
            task.assigned_at = task.start_offset()
            partitions.append(task.topic_partition(task.assigned_at))
            self._assigned.add(task.key)
        if partitions:
            self._consumer.incremental_assign(partitions)

    def _unassign(self, tasks: Iterable[PartitionTask]) -> None:
        keys = [t.key for t in tasks if t.key in self._assigned]
        if keys:
            self._consumer.incremental_unassign([TopicPartition(t, p) for t, p in keys])
            self._assigned.difference_update(keys)

    def _drop_finished(self) -> None:
        """Stop fetching answered partitions at once: their later batches are wasted bytes."""
        if self._finished:
            finished, self._finished = self._finished, []
            self._unassign(finished)

    def _finish(self, task: PartitionTask) -> None:
        if self._tasks.pop(task.key, None) is not None:
            self._finished.append(task)

    # --- events ---------------------------------------------------------------------------

    def _handle(self, message: Any) -> None:
        err = message.error()
        task = self._tasks.get((message.topic(), message.partition()))
        code = None if err is None else err.code()
        if task is None:  # a partition no longer wanted, or the client itself
            if code not in (None, _ERR_PARTITION_EOF, _ERR_AUTO_OFFSET_RESET):
                self._on_client_error(err)
        elif err is None:
            self._on_record(task, message)
        elif code == _ERR_PARTITION_EOF:
            self._on_eof(task, message.offset())
        elif code == _ERR_AUTO_OFFSET_RESET:
            self._on_out_of_range(task)
        else:
            self._on_partition_error(task, err)

    def _on_record(self, task: PartitionTask, message: Any) -> None:
        offset: int = message.offset()
        if offset < task.assigned_at:
            return  # already returned by consume() before we moved this partition on
        ts, ts_type = timestamp_of(message)
        if task.below_start and task.log_start is not None and offset >= task.log_start:
            self._answer_below_start(task, None if ts is not None else _NO_TIMESTAMP, offset,
                                     ts, ts_type)
        while task.wanted and task.wanted[0].offset <= offset:
            wanted = task.wanted.pop(0)
            outcome = ReadOutcome.FOUND if wanted.offset == offset else ReadOutcome.GAP
            self._answer_record(wanted, outcome, offset, ts, ts_type)
        if task.done:
            self._finish(task)
        elif not task.below_start and task.wanted[0].offset - offset > _READ_THROUGH_MAX:
            self._reposition(task)

    def _reposition(self, task: PartitionTask) -> None:
        """Seek straight to the next wanted offset of a partition (see _READ_THROUGH_MAX)."""
        self._unassign([task])
        self._assign([task])

    def _on_eof(self, task: PartitionTask, eof_offset: int) -> None:
        """Nothing at or after the fetch position: every open request ends there."""
        if eof_offset < task.assigned_at:
            return  # left over from an earlier assignment of this partition
        for wanted in task.wanted:
            self._answer(wanted, ReadOutcome.END, log_end_offset=eof_offset)
        task.log_end = eof_offset
        self._answer_below_start(task, "no retained record: the log is empty")
        task.wanted.clear()
        self._finish(task)

    def _on_out_of_range(self, task: PartitionTask) -> None:
        """The offset is not in the log: find out where the log starts and ends, then re-read."""
        task.resets += 1
        timeout = max(0.1, min(self._remaining(), 5.0))
        try:
            watermarks = self._consumer.get_watermark_offsets(
                task.topic_partition(), timeout=timeout, cached=False)
        except Exception as exc:
            self._fail_task(task, f"offset out of range; log start unknown: {exc}")
            return
        low, high = map(int, watermarks)
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

    def _on_partition_error(self, task: PartitionTask, err: Any) -> None:
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

    def _answer(self, wanted: Wanted, outcome: ReadOutcome, **fields: Any) -> None:
        self._answers.append((wanted.index, RecordRead(wanted.request, outcome, **fields)))

    def _answer_record(
        self,
        wanted: Wanted,
        outcome: ReadOutcome,
        offset: int,
        ts: int | None,
        ts_type: str | None,
    ) -> None:
        if ts is None:
            self._answer(wanted, ReadOutcome.FAILED, offset=offset, error=_NO_TIMESTAMP)
            return
        self._answer(wanted, outcome, offset=offset, timestamp_ms=ts, timestamp_type=ts_type)

    def _answer_below_start(self, task: PartitionTask, error: str | None = None,
                            offset: int | None = None, ts: int | None = None,
                            ts_type: str | None = None) -> None:
        """Data loss: every request below the log start gets where the log starts and ends now,
        and the earliest record still there (or ``error``: why none came with it)."""
        for wanted in task.below_start:
            self._answer(wanted, ReadOutcome.OUT_OF_RANGE, log_start_offset=task.log_start,
                         log_end_offset=task.log_end, offset=offset, timestamp_ms=ts,
                         timestamp_type=ts_type, error=error)
        task.below_start.clear()

    def _fail_task(self, task: PartitionTask, error: str) -> None:
        for wanted in task.wanted:
            self._answer(wanted, ReadOutcome.FAILED, error=error)
        self._answer_below_start(task, f"earliest retained record not read: {error}")
        task.wanted.clear()
        self._finish(task)

    def _expire_leftovers(self) -> None:
        """Deadline (or a broken consumer): answer whatever is still open with the reason."""
        for task in list(self._tasks.values()):
            self._fail_task(task, self._leftover_reason(task))
        self._finished.clear()

    def _leftover_reason(self, task: PartitionTask) -> str:
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

    def _cached_watermark_hint(self, task: PartitionTask) -> list[str]:
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


def fail_batch(batch: list[PartitionTask], error: str) -> list[Answer]:
    return [
        (w.index, RecordRead(w.request, ReadOutcome.FAILED, error=error))
        for task in batch
        for w in (*task.wanted, *task.below_start)
    ]
