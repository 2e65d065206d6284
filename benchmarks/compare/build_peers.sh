#!/usr/bin/env bash
# Install the comparison's one registry-packaged peer, and say where the others are expected.
#
# Benchmarks only: nothing here is a dependency of the package or of CI. This script fetches no
# source and builds nothing from fetched source; no peer's source is part of this repository.
#
#   klag-exporter   the newest version crates.io serves, `cargo install --locked` (a registry
#                   package). Needs cmake libssl-dev libsasl2-dev pkg-config libclang-dev
#                   libcurl4-openssl-dev; a long LTO build (tens of minutes on 2 cores).
#                   KLAG_VERSION=<x.y.z> pins another version.
#   the others      kafka_exporter v1.9.0, kminion v2.3.5, Burrow 1.9.5 and the Consumer Freshness
#                   Tracker are built locally from their own sources by whoever runs the comparison
#                   (the Go module proxy refuses `go install` of the first three; the tracker is
#                   compiled with javac against Maven Central jars). This script only checks that
#                   their binaries sit at the paths the benchmarks read.
#
# Layout: $PEERS/<name>/VERSION holds one line `<name> <version> <source commit> <toolchain>`.
set -uo pipefail
PEERS="${FT_PEERS_DIR:-$HOME/.cache/freshness-tracker/peers}"
mkdir -p "$PEERS"
status=0

klag_version() {  # the version an installed klag-exporter reports, e.g. 0.1.29
    "$1" --version 2>/dev/null | awk '{print $NF}'
}

want="${KLAG_VERSION:-}"
if [[ -z "$want" ]]; then
    want=$(cargo info --quiet klag-exporter 2>/dev/null | awk '/^version:/ {print $2; exit}')
fi
have=""
if [[ -x "$PEERS/klag/bin/klag-exporter" ]]; then
    have=$(klag_version "$PEERS/klag/bin/klag-exporter")
fi
if [[ -z "$want" ]]; then
    echo "klag-exporter: cannot ask crates.io for its newest version (cargo info klag-exporter)" >&2
    status=1
elif [[ "$have" == "$want" ]]; then
    echo "klag-exporter $want: already installed ($PEERS/klag/bin/klag-exporter)"
else
    if [[ -n "$have" ]]; then  # keep the older build beside the new one
        mkdir -p "$PEERS/klag-$have/bin"
        cp -p "$PEERS/klag/bin/klag-exporter" "$PEERS/klag-$have/bin/klag-exporter"
        [[ -f "$PEERS/klag/VERSION" ]] && cp -p "$PEERS/klag/VERSION" "$PEERS/klag-$have/VERSION"
    fi
    if cargo install klag-exporter --version "$want" --locked --force --root "$PEERS/klag"; then
        vcs=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"klag-exporter-$want"/.cargo_vcs_info.json \
            2>/dev/null | head -n 1)
        commit=$(sed -n 's/.*"sha1": *"\([0-9a-f]*\)".*/\1/p' "${vcs:-/dev/null}" 2>/dev/null)
        echo "klag $want ${commit:-unknown} rustc-$(rustc --version | awk '{print $2}')" \
            > "$PEERS/klag/VERSION"
        echo "klag-exporter $want: $PEERS/klag/bin/klag-exporter"
    else
        echo "klag-exporter $want: cargo install failed" >&2
        status=1
    fi
fi

expect() {  # name path
    if [[ -x "$2" ]]; then
        echo "$1: $2 ($(cat "$(dirname "$2")/../VERSION" 2>/dev/null || echo 'no VERSION file'))"
    else
        echo "$1: expected at $2 (built locally from its source; not part of this repository)"
    fi
}
expect "kafka_exporter v1.9.0" "$PEERS/kafka_exporter/bin/kafka_exporter"
expect "kminion v2.3.5" "$PEERS/kminion/bin/kminion"
expect "Burrow 1.9.5" "$PEERS/burrow/bin/Burrow"
if [[ -x "$PEERS/cft/run" ]]; then
    echo "Consumer Freshness Tracker: $PEERS/cft/run ($(cat "$PEERS/cft/VERSION" 2>/dev/null || echo 'no VERSION file'))"
else
    echo "Consumer Freshness Tracker: expected at $PEERS/cft/run with its jars in $PEERS/cft/lib/" \
        "(compiled locally from its source; not part of this repository)"
fi
exit $status
