"""freshness-tracker: how far behind, in time, every Kafka consumer group is."""

__version__ = "0.1.0"
