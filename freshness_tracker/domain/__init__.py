"""Pure domain logic: no I/O, no clock, no third-party clients."""
