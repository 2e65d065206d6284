"""How many clusters compute at once: measuring, rolling up and rendering take turns.

Those steps are pure CPU (no Burrow, no Kafka), and the interpreter runs one thread at a time:
twenty clusters computing at once do not finish sooner than two at a time, they only hold
twenty cycles' intermediate values together and take turns on the interpreter. With many
clusters cycling back to back in one process, two at a time lowers both peak RSS and CPU per
round (docs/scale.md).

Only compute is gated: a cluster waiting for Burrow or Kafka holds no slot, so a slow cluster
never delays another one's turn. A wait for a slot is bounded (at most MAX_TURN_WAIT_S, and
the callers' own shares of their deadlines): past it the step runs anyway, because the gate
saves memory and CPU and must never stall a cycle. A step that holds a slot makes no external
call (the cycle's log line is written after its slot is given back), so no slot is held for
longer than computing takes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["COMPUTE_SLOTS", "MAX_TURN_WAIT_S", "ComputeGate"]

log = logging.getLogger(__name__)

#: The longest wait for a turn: others' turns last as long as computing their snapshots, far
#: less than this even for the largest clusters, so a longer wait means a stuck holder, a bug.
MAX_TURN_WAIT_S = 10.0
#: Clusters computing at once. The interpreter runs one thread at a time; a second slot lets
#: one cluster deflate its /metrics (zlib runs outside the interpreter lock) while another
#: measures.
COMPUTE_SLOTS = 2


class ComputeGate:
    """At most `slots` holders at a time; a holder waits at most the time it is given."""

    def __init__(self, slots: int = COMPUTE_SLOTS) -> None:
        self.slots = max(slots, 1)
        self._free = threading.BoundedSemaphore(self.slots)

    @contextmanager
    def turn(self, wait_s: float, what: str = "") -> Iterator[bool]:
        """Hold a slot for the block, waiting at most `wait_s` for it (and never more than
        MAX_TURN_WAIT_S); yields whether it got one (without, the block runs anyway)."""
        wait_s = min(max(wait_s, 0.0), MAX_TURN_WAIT_S)
        held = self._free.acquire(timeout=wait_s)
        if not held:
            log.debug("no compute slot within %.3g s for %s: computing anyway", wait_s, what)
        try:
            yield held
        finally:
            if held:
                self._free.release()
