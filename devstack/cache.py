"""Where ``scripts/install`` puts the Kafka classpaths, and which Burrow binaries there are.

Why a cache outside the repo: a Kafka runtime (dozens of jars, tens of MB) is a per-machine artefact
that every checkout and worktree can share. The Kafka versions are read from the poms so the
install step and the stack can never disagree:

* ``devstack/poms/kafka-3.9.xml``: **Kafka 3.9.1**, the default stack's broker. It is the newest
  Kafka that the Burrow these machines can install (Debian's 1.2.1) reads: Burrow 1.2.1 sends
  ListOffsets v0, which Kafka 4.0 removed (KIP-896).
* ``devstack/poms/kafka-4.1.xml``: **Kafka 4.1.1**, for what needs no Burrow (the lookup engine
  on a current broker), or with a Burrow >= 1.9.5 the user brings (``FT_BURROW_BIN``): the
  registries here serve none (the Go module proxy answers 403 for github.com/linkedin/Burrow).

Overrides: ``FT_KAFKA_CLASSPATH`` (a directory of jars for every version), ``FT_BURROW_BIN`` (a
Burrow >= 1.9.5 binary), ``FT_LEGACY_BURROW_BIN`` (another Burrow 1.2.1 binary).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from devstack.processes import ProcessStartError

__all__ = [
    "BURROW_VERSION",
    "CURRENT_POM",
    "DEBIAN_BURROW",
    "DEFAULT_POM",
    "burrow_binary",
    "cache_dir",
    "current_kafka_version",
    "debian_burrow_binary",
    "default_kafka_version",
    "kafka_classpath_dir",
    "kafka_version",
]

#: Kafka 4.1.1: the current line (no Burrow from the registries reads it).
CURRENT_POM = Path(__file__).parent / "poms" / "kafka-4.1.xml"
#: Kafka 3.9.1: the default stack's broker (Debian's Burrow 1.2.1 reads it).
DEFAULT_POM = Path(__file__).parent / "poms" / "kafka-3.9.xml"
#: The oldest Burrow that reads Kafka 4.1's ``__consumer_offsets`` (offset-commit value v4).
BURROW_VERSION = "1.9.5"
#: Where Debian's ``burrow`` package (1.2.1) puts the binary (``dpkg -L burrow``).
DEBIAN_BURROW = Path("/usr/bin/Burrow")
_INSTALL_HINT = "run scripts/install (it assembles the classpaths once, then reuses them)"


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-$HOME/.cache}/freshness-tracker``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "freshness-tracker"


def kafka_version(pom: Path = CURRENT_POM) -> str:
    """``kafka.version`` of a devstack pom."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(pom).getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not (node.text or "").strip():
        raise ProcessStartError(f"no <kafka.version> property in {pom}")
    return (node.text or "").strip()


def default_kafka_version() -> str:
    """The default stack's Kafka (3.9.1)."""
    return kafka_version(DEFAULT_POM)


def current_kafka_version() -> str:
    """The current Kafka line (4.1.1)."""
    return kafka_version(CURRENT_POM)


def kafka_classpath_dir(version: str | None = None) -> Path:
    """The jars of Kafka ``version`` (default: the default stack's); ProcessStartError if
    missing."""
    override = os.environ.get("FT_KAFKA_CLASSPATH")
    version = version or default_kafka_version()
    path = Path(override) if override else cache_dir() / f"kafka-{version}"
    if not any(path.glob("kafka_2.13-*.jar")):
        raise ProcessStartError(f"no Kafka broker jars in {path}: {_INSTALL_HINT}")
    return path


def debian_burrow_binary() -> Path:
    """Debian's Burrow 1.2.1 (``FT_LEGACY_BURROW_BIN`` overrides); ProcessStartError if
    missing."""
    path = Path(os.environ.get("FT_LEGACY_BURROW_BIN") or DEBIAN_BURROW)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ProcessStartError(f"no Burrow 1.2.1 at {path}: {_INSTALL_HINT} (apt burrow)")
    return path


def burrow_binary() -> Path:
    """A Burrow >= 1.9.5 the user built (``FT_BURROW_BIN``): needed only to run Kafka 4 with a
    Burrow. ProcessStartError saying so when there is none."""
    override = os.environ.get("FT_BURROW_BIN")
    if not override:
        raise ProcessStartError(
            f"Kafka 4 needs Burrow >= {BURROW_VERSION}, which no registry here serves (the Go "
            "module proxy answers 403 for github.com/linkedin/Burrow): set FT_BURROW_BIN to one "
            "you built, or use the default stack (Kafka 3.9.1 + Debian's Burrow 1.2.1)")
    path = Path(override)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ProcessStartError(f"FT_BURROW_BIN={path} is not an executable file")
    return path
