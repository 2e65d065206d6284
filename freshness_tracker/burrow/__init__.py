"""Burrow HTTP API v3: the client (I/O) and the parser (pure)."""
