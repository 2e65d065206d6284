"""Configuration: HOCON files merged over reference.conf, validated into frozen settings."""

from freshness_tracker.config.load import load_settings
from freshness_tracker.config.settings import ClusterSettings, Settings

__all__ = ["ClusterSettings", "Settings", "load_settings"]
