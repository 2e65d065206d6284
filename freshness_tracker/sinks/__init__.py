"""Where results go: Prometheus, `once` output, the Parquet history."""
