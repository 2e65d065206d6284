"""freshness-tracker beside the tools users would pick instead (``python -m benchmarks.compare``).

Accuracy on the accuracy harness's shapes and ground truth, cost on the proxied 3-node stack;
peers are local builds (``build_peers.sh``), never a dependency of the package or of CI.
"""
