"""The Spark data pipeline (extra: spark): fleet-wide snapshots into the history table and SLO
reports over it. It reuses the core (Burrow client, planning, lookup engine, freshness and SLO
math, history writer); nothing here re-implements them. See docs/spark.md."""
