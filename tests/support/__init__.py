"""The one set of test helpers, shared by every suite and by the benchmarks.

- :mod:`tests.support.stack`: the real local stack (start, skip locally / fail in CI), polling.
- :mod:`tests.support.fakes`: fakes of the core's Protocols (Burrow, record reader).
- :mod:`tests.support.fake_kafka`: a fake librdkafka consumer over a fake broker.
- :mod:`tests.support.scrape`: the one Prometheus text parser.
- :mod:`tests.support.config`: the one builder of exporter configs (HOCON text).
- :mod:`tests.support.exporter`: the exporter in this process, or as a real process.
- :mod:`tests.support.seeding`: records with known times and real group commits on the stack.

Test modules import from here (or from their suite's own support module), never from each other.
"""
