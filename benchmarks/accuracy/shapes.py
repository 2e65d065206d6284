"""Traffic shapes: when the producer writes, how fast the consumer group processes, what matters.

A shape is pure data: the producer's send times (seconds after the run's start), the consumer's
per-record processing time by phase (None: the consumer neither reads nor commits, i.e. stuck or
down), and the moments that matter. Phases and send times scale with the run's duration, so the
``--quick`` run plays the same stories, shorter.

Each shape runs on its own single-partition topic with its own group, all shapes concurrently;
with replicas (``--replicas N``) each shape runs N times, copy k shifted by k/N of the poll
interval (:meth:`Shape.shifted`), each copy on its own topic and group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NOTES", "Event", "Shape", "smoke_shapes", "standard_shapes"]


@dataclass(frozen=True)
class Event:
    """A moment that matters. ``kind`` is ``onset`` (lag starts), ``recovery`` (lag clears) or
    ``info``. With ``at_s`` None the moment is found in the ground truth: the first time at or
    after ``after_s`` when nothing is uncommitted (e.g. "caught up")."""

    label: str
    kind: str
    at_s: float | None = None
    after_s: float = 0.0


@dataclass(frozen=True)
class Shape:
    name: str
    title: str
    description: str
    produce_at_s: tuple[float, ...]
    consumer: tuple[tuple[float, float | None], ...]  # (from s, processing s per record | None)
    events: tuple[Event, ...] = ()

    def processing_at(self, elapsed_s: float) -> float | None:
        current: float | None = None
        for start, processing in self.consumer:
            if elapsed_s >= start:
                current = processing
        return current

    def shifted(self, delta_s: float) -> Shape:
        """The same shape ``delta_s`` seconds later: every send time, consumer phase start and
        event moment moves by ``delta_s``. Why: copies of a shape shifted by fractions of the
        poll interval meet a poller's polls at different phases, so their pooled score does not
        hang on where one run's polls happened to fall. The first phase (from the start) stays
        at the start: moving it would only add a phase with no consumer before any record."""
        if delta_s == 0:
            return self

        def later(t: float) -> float:
            return round(t + delta_s, 3)

        consumer = tuple((start if i == 0 and start <= 0 else later(start), processing)
                         for i, (start, processing) in enumerate(self.consumer))
        events = tuple(Event(e.label, e.kind, None if e.at_s is None else later(e.at_s),
                             later(e.after_s)) for e in self.events)
        return Shape(self.name, self.title, self.description,
                     tuple(later(t) for t in self.produce_at_s), consumer, events)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "title": self.title, "description": self.description,
            "produce_at_s": list(self.produce_at_s),
            "consumer": [list(c) for c in self.consumer],
            "events": [e.__dict__ for e in self.events],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Shape:
        return cls(
            name=d["name"], title=d["title"], description=d["description"],
            produce_at_s=tuple(d["produce_at_s"]),
            consumer=tuple((float(a), None if b is None else float(b)) for a, b in d["consumer"]),
            events=tuple(Event(**e) for e in d["events"]),
        )


# What each shape shows, by mechanism (true whatever the run's numbers); used by the report.
NOTES = {
    "steady": (
        "Everything waits for well under a second, and every method stays within a couple of "
        "seconds. What ours shows is Burrow's view: a record already committed is still "
        "counted as waiting until Burrow has read the commit from __consumer_offsets, while "
        "Burrow's log end offset may already include the next records."
    ),
    "burst-idle": (
        "Lag ÷ rate divides the backlog by the burst averaged over its window: too "
        "old right after the burst, then too young, then +∞ once the burst has left "
        "the window while records still wait. The interpolation finds each committed "
        "offset between two points taken during the burst and stays close. At the "
        "end the truth drops to 0 at once; every method shows the old age until its "
        "next look at Burrow, ours until its next cycle."
    ),
    "low-volume": (
        "One waiting record is, to lag ÷ rate, as old as the rate window divided by "
        "the records in it, whatever its real age: with a record every "
        "{lv} s that is a steady over-estimate, enough to cross an alert threshold "
        "the truth never reaches. The interpolation, with a point every sample, "
        "brackets the record between the last poll before it and the first after "
        "it; while the record waits its error is about one poll interval."
    ),
    "stuck": (
        "While the rate is steady both estimates are right: the linear assumption "
        "holds. After the drop, lag ÷ rate divides the whole backlog by the new low "
        "rate. The interpolation table (newest points only) no longer contains the "
        "stuck offset, so it extrapolates along the line from its oldest to its "
        "newest point, whose slope falls toward the new rate as the table fills with "
        "slow points: kafka-lag-exporter's runaway extrapolation. Ours reads the "
        "stuck record's timestamp and grows one second per second."
    ),
    "outage-catchup": (
        "The produce rate never changes, so both estimates hold here. While the group "
        "catches up, the truth falls several seconds per second, so every method's "
        "delay in seeing commits (Burrow's, plus our cycle) shows as a few seconds of "
        "error."
    ),
    "idle-caught-up": (
        "Nothing waits, and every method says 0 (the interpolation through its "
        "LagIsZero rule: the committed offset equals the newest point)."
    ),
}


def _every(start: float, end: float, interval: float) -> list[float]:
    times, t = [], start
    while t < end:
        times.append(round(t, 3))
        t += interval
    return times


def standard_shapes(duration_s: float = 480.0, low_volume_interval_s: float = 45.0) -> list[Shape]:
    """The six load shapes, scaled to ``duration_s`` of traffic."""
    d = duration_s
    burst_at, burst_n, burst_len, drain_rate = max(10.0, 0.1 * d), 300, 3.0, 4.0
    stall_at, drop_at = max(15.0, 0.1 * d), 0.5 * d
    down_at, up_at, catchup_rate, outage_rate = 0.25 * d, 0.5 * d, 12.0, 3.0
    lv = low_volume_interval_s
    lv_processing = round(lv / 5, 1)
    return [
        Shape(
            "steady", "Steady flow, consumer keeping up",
            "5 records/s for the whole run; the group reads each record, processes it for 20 ms "
            "and commits.",
            tuple(_every(0.5, d, 0.2)), ((0.0, 0.02),),
        ),
        Shape(
            "burst-idle", "A burst, then idle",
            f"Idle, then {burst_n} records in {burst_len:.0f} s at t={burst_at:.0f} s, then "
            f"nothing. The group drains them at {drain_rate:.0f} records/s "
            f"(~{burst_n / drain_rate:.0f} s) and is then caught up on an idle topic.",
            tuple(round(burst_at + i * burst_len / burst_n, 3) for i in range(burst_n)),
            ((0.0, 1 / drain_rate),),
            (Event("burst", "onset", burst_at), Event("drained", "recovery", None,
                                                      burst_at + burst_len)),
        ),
        Shape(
            "low-volume", "Low volume",
            f"One record every {lv:.0f} s (standing in for one every few minutes: time is "
            f"compressed); the group takes {lv_processing:.0f} s to process each record, then "
            "commits.",
            tuple(_every(lv / 2, d, lv)), ((0.0, lv_processing),),
        ),
        Shape(
            "stuck", "Stuck consumer (traffic falls 10x halfway)",
            f"2 records/s, falling to 0.2 records/s at t={drop_at:.0f} s (a nightly drop). The "
            f"group keeps up, then stops reading and committing at t={stall_at:.0f} s for good.",
            tuple(_every(0.5, drop_at, 0.5) + _every(drop_at, d, 5.0)),
            ((0.0, 0.05), (stall_at, None)),
            (Event("stall", "onset", stall_at), Event("traffic drop", "info", drop_at)),
        ),
        Shape(
            "outage-catchup", "Catching up after an outage",
            f"3 records/s. The group keeps up, is down from t={down_at:.0f} s to "
            f"t={up_at:.0f} s, then catches up at {catchup_rate:.0f} records/s.",
            tuple(_every(0.5, d, 1 / outage_rate)),
            ((0.0, 0.05), (down_at, None), (up_at, 1 / catchup_rate)),
            (Event("outage", "onset", down_at), Event("resume", "info", up_at),
             Event("caught up", "recovery", None, up_at)),
        ),
        Shape(
            "idle-caught-up", "Caught up on an idle topic",
            "20 records at t≈2 s, read and committed at once; then nothing for the rest of the "
            "run.",
            tuple(round(2.0 + i * 0.1, 3) for i in range(20)), ((0.0, 0.02),),
            (Event("idle", "info", 4.0),),
        ),
    ]


def smoke_shapes() -> list[Shape]:
    """Two tiny shapes for the integration smoke test (~25 s of traffic)."""
    return [
        Shape(
            "stuck-idle", "Stuck consumer on a topic that goes idle",
            "2 records/s until t=8 s, then nothing; the group stops committing at t=3 s.",
            tuple(_every(0.5, 8.0, 0.5)), ((0.0, 0.02), (3.0, None)),
            (Event("stall", "onset", 3.0), Event("producer stops", "info", 8.0)),
        ),
        Shape(
            "idle-caught-up", "Caught up on an idle topic",
            "10 records at t≈1 s, committed at once; then nothing.",
            tuple(round(1.0 + i * 0.1, 3) for i in range(10)), ((0.0, 0.02),),
        ),
    ]
