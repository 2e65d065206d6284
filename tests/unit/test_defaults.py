"""Defaults are written once, in reference.conf: what HOCON users read and get, and what the
settings types' field defaults read (`freshness_tracker.reference`) for code that builds
settings directly. Here: both routes give the same values, and the environment overrides a
config but never a type's default."""

from __future__ import annotations

import dataclasses
import os

import pytest

from freshness_tracker import reference
from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import Settings
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.web_settings import WebSettings

MINIMAL = 'clusters = [{ name = c, kafka { "bootstrap.servers" = "k:1" } }]'


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in [n for n in os.environ if n.startswith("FRESHNESS_TRACKER_")]:
        monkeypatch.delenv(name)
    return load_settings(text=MINIMAL)


def test_reference_conf_and_the_settings_types_agree(settings: Settings) -> None:
    assert settings.lookup == LookupSettings()
    assert settings.web == WebSettings()
    # backoff_s has no key (a fixed policy, not a setting): it keeps its type default
    assert settings.burrow == BurrowSettings()
    kafka = settings.clusters[0].kafka
    assert kafka.num_consumers == ClusterKafkaSettings("c").num_consumers
    defaults = {f.name: f.default for f in dataclasses.fields(Settings)
                if f.default is not dataclasses.MISSING}
    assert settings.cycle_timeout_s == defaults["cycle_timeout_s"]
    assert settings.partition_metrics == defaults["partition_metrics"]


def test_the_environment_overrides_a_config_not_a_type_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRESHNESS_TRACKER_BURROW_URL", "http://elsewhere:9000")
    monkeypatch.setenv("FRESHNESS_TRACKER_PORT", "9999")
    reference.reference_tree.cache_clear()
    try:
        assert reference.default("burrow.url") == "http://127.0.0.1:8000"
        assert reference.default("port") == 8081
        configured = load_settings(text=MINIMAL)
        assert (configured.burrow.url, configured.web.port) == ("http://elsewhere:9000", 9999)
    finally:
        reference.reference_tree.cache_clear()


def test_durations_are_read_as_seconds() -> None:
    assert reference.default_seconds("lookup.fetchWaitMax") == 0.1
    assert reference.default_seconds("cycleTimeout") == 120.0
