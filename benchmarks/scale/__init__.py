"""Paper-scale synthetic catalogue for load, latency and query-count benchmarks (not for users)."""
