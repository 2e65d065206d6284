"""The one set of test helpers, shared by every suite under tests/.

- :mod:`tests.support.fakes`: fakes of the core's Protocols (BurrowSource, RecordReader).
- :mod:`tests.support.fake_kafka`: a fake librdkafka consumer over a fake broker.
- :mod:`tests.support.stack`: an external stack refused where a test needs its own, and marker
  groups in another group's ``__consumer_offsets`` partition.
- :mod:`tests.support.demo`: ``python -m devstack.demo`` as `scripts/run` starts it, stopped by
  SIGTERM, with what it left running.
- :mod:`tests.support.seeding`: records with known times and real group commits on the stack.
- :mod:`tests.support.history`, :mod:`tests.support.golden`: domain results for sink tests.
- :mod:`tests.support.kafka_wire`: a raw ApiVersions round trip, below any Kafka client.
- :mod:`tests.support.record`: a run's record (versions, machine, timed steps, outcomes) as
  JSON for the page that quotes it, written when ``FT_RECORD_DIR`` is set.
- :mod:`tests.support.fake_burrow`: a fault-injecting HTTP front of Burrow (or a Burrow of its
  own), for the fault and unit suites; :mod:`tests.support.http_burrow`: a recording HTTP(S)
  server with scripted answers, for the Burrow client's tests.

What the benchmarks use too lives in ``devstack/``, imported from there by both:
:mod:`devstack.testing` (starting the real stack: skip locally, fail under CI=true),
:func:`devstack.processes.poll`, :mod:`devstack.scrape` (the one Prometheus text parser),
:mod:`devstack.exporter_config` (the one builder of exporter configs), :mod:`devstack.exporter`
(the exporter in this process or as a real process), :mod:`devstack.logfmt`,
:mod:`devstack.memory` (a process's peak RSS while a block runs) and :mod:`devstack.oracle` (the
test oracle of /metrics: `generate_latest` over a Collector). The suite-wide fixtures are in
the root ``conftest.py``. Each suite's own helpers sit in its directory
(``tests/faults/harness.py``, ``tests/realkafka/helpers.py``, ``tests/deploy/tools.py``...).
Test modules import from these, never from each other, and never from ``benchmarks/``.
"""
