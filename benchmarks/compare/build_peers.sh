#!/usr/bin/env bash
# Build the comparison's peers locally into ~/.cache/freshness-tracker/peers (FT_PEERS_DIR).
# Benchmarks only: nothing here is a dependency of the package or of CI, and no peer source is
# ever committed. Each peer is optional: one that cannot be built is reported and skipped.
#
#   klag-exporter 0.1.22   cargo install (needs cmake libssl-dev libsasl2-dev pkg-config
#                          libclang-dev libcurl4-openssl-dev; several minutes)
#   kafka_exporter 1.9.0   `go install` of the module is refused by the Go module proxy (403), so
#                          the v1.9.0 tag's source is built with `go build`, its dependencies from
#                          the proxy. Source: KAFKA_EXPORTER_SRC (a checkout), else a git clone.
#   kminion 2.3.5          the same route if KMINION_SRC holds v2.3.5's source (not available on
#                          the machine the comparison was generated on: see docs/comparison.md).
set -uo pipefail
PEERS="${FT_PEERS_DIR:-$HOME/.cache/freshness-tracker/peers}"
mkdir -p "$PEERS"
status=0

build_go() {  # name tag repo-url src-env-value
    local name=$1 tag=$2 url=$3 src=${4:-}
    local work
    work=$(mktemp -d)
    if [[ -n "$src" ]]; then
        cp -r "$src"/. "$work"/
    elif ! git clone --quiet --depth 1 --branch "$tag" "$url" "$work"; then
        echo "$name $tag: cannot get the source ($url)" >&2
        rm -rf "$work"
        return 1
    fi
    mkdir -p "$PEERS/$name/bin"
    (cd "$work" && go build -p 1 -o "$PEERS/$name/bin/$name" .) || {
        echo "$name $tag: go build failed" >&2
        rm -rf "$work"
        return 1
    }
    rm -rf "$work"
    echo "$name $tag: $PEERS/$name/bin/$name"
}

if [[ -x "$PEERS/klag/bin/klag-exporter" ]]; then
    echo "klag-exporter: already built ($PEERS/klag/bin/klag-exporter)"
elif cargo install klag-exporter --version 0.1.22 --locked --root "$PEERS/klag"; then
    echo "klag-exporter 0.1.22: $PEERS/klag/bin/klag-exporter"
else
    echo "klag-exporter 0.1.22: cargo install failed" >&2
    status=1
fi

if [[ -x "$PEERS/kafka_exporter/bin/kafka_exporter" ]]; then
    echo "kafka_exporter: already built ($PEERS/kafka_exporter/bin/kafka_exporter)"
else
    build_go kafka_exporter v1.9.0 https://github.com/danielqsj/kafka_exporter.git \
        "${KAFKA_EXPORTER_SRC:-}" || status=1
fi

if [[ -n "${KMINION_SRC:-}" ]]; then
    build_go kminion v2.3.5 "" "$KMINION_SRC" || status=1
else
    echo "kminion 2.3.5: skipped (set KMINION_SRC to v2.3.5's source; go install is refused)"
fi
exit $status
