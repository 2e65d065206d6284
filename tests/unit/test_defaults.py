"""One set of defaults: reference.conf (what HOCON users read and get) and the settings types'
own defaults (what code that builds settings directly gets) must be the same values, so a
default changed in one place and not the other fails here."""

from __future__ import annotations

import dataclasses
import os

import pytest

from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import Settings
from freshness_tracker.http import WebSettings
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

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
