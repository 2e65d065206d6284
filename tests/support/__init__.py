"""The one set of test helpers, shared by every suite and by the benchmarks.

- :mod:`tests.support.fake_kafka`: a fake librdkafka consumer over a fake broker.
- :mod:`tests.support.scrape`: the one Prometheus text parser, and the metric names tests look up.
- :mod:`tests.support.config`: the one builder of exporter configs (HOCON text).
- :mod:`tests.support.exporter`: the exporter in this process, with its listener, or as a real
  ``python -m freshness_tracker`` process.
- :mod:`tests.support.demo`: ``python -m devstack.demo`` as `scripts/run` starts it, stopped by
  SIGTERM, with what it left running.
- :mod:`tests.support.seeding`: records with known times and real group commits on the stack.
- :mod:`tests.support.history`, :mod:`tests.support.golden`: domain results for sink tests.
- :mod:`tests.support.kafka_wire`: a raw ApiVersions round trip, below any Kafka client.
- :mod:`tests.support.memory`: a process's peak RSS while a block runs.
- :mod:`tests.support.record`: a run's record (versions, machine, timed steps, outcomes) as
  JSON for the page that quotes it, written when ``FT_RECORD_DIR`` is set.
- :mod:`tests.support.fake_burrow`: a fault-injecting HTTP front of Burrow (or a Burrow of its
  own), for the fault and unit suites; :mod:`tests.support.http_burrow`: a recording HTTP(S)
  server with scripted answers, for the Burrow client's tests.

Beside it: ``tests/stack_support.py`` (starting the real stack, polling) and ``tests/fakes.py``
(fakes of the core's Protocols); each suite's own helpers sit in its directory
(``tests/faults/harness.py``, ``tests/realkafka/helpers.py``, ``tests/deploy/tools.py``...).
Test modules import from these, never from each other.
"""
