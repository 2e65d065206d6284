# freshness-tracker: the exporter as a container image.
#
#   docker build -t freshness-tracker .
#   docker run --read-only -p 8081:8081 \
#     -v "$PWD/my.conf:/etc/freshness-tracker/freshness-tracker.conf:ro" freshness-tracker
#
# The config is read from /etc/freshness-tracker/freshness-tracker.conf (mount it; the Helm chart
# mounts its rendered ConfigMap there). Secrets come from the environment via ${?ENV} in the file.
# Runs as uid 10001, writes nothing (works with a read-only root filesystem), listens on 8081.

ARG PYTHON_IMAGE=python:3.11-slim

# --- build: the project's own wheel, installed with its dependencies into a venv ----------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY freshness_tracker/ ./freshness_tracker/
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /dist . \
 && python -m venv /opt/venv \
 && /opt/venv/bin/python -m pip install --no-cache-dir /dist/freshness_tracker-*.whl \
 && /opt/venv/bin/freshness-tracker --version

# --- runtime: the venv only, no build tools, no pip cache, no source tree ------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="freshness-tracker" \
      org.opencontainers.image.description="Burrow sidecar exporter: exact Kafka consumer-group freshness for Prometheus" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 freshness-tracker \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin freshness-tracker
COPY --from=build /opt/venv /opt/venv
# No .pyc writes at run time (the venv is byte-compiled at install), unbuffered logs, and any
# temporary file Python might want goes to /tmp (an emptyDir under a read-only root filesystem).
# Two malloc arenas: glibc otherwise keeps one per thread (Burrow workers, librdkafka threads:
# hundreds with many clusters), each holding freed memory (the RSS it saves: docs/scale.md).
# A fixed mmap threshold (glibc's first value, which it otherwise raises as big blocks are freed):
# blocks from that size up are mapped alone and given back when freed, which lowers peak RSS.
# The exporter sets both itself when they are unset (freshness_tracker/process.py); here they hold from the
# interpreter's first allocation.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    TMPDIR=/tmp
WORKDIR /tmp
USER 10001:10001
EXPOSE 8081
# Liveness as the chart's probe sees it: /healthz on the listener (FRESHNESS_TRACKER_PORT if set).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('FRESHNESS_TRACKER_PORT', '8081'), timeout=4)"]
ENTRYPOINT ["freshness-tracker"]
CMD ["run", "--config", "/etc/freshness-tracker/freshness-tracker.conf"]
