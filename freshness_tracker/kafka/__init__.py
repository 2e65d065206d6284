"""Kafka side: consumer pools, batched point reads, the timestamp cache, topic configs."""
