"""Integration fixtures. The session's real stack (``stack``: Apache Kafka 3.9.1 + Burrow 1.2.1,
or your own via FT_STACK_*) comes from the root conftest.py, shared with tests/spark.

A component that cannot start skips the integration tests locally, with the reason; under
``CI=true`` it fails the run instead. A failing test gets every component's log tail attached.
"""

from __future__ import annotations
