#!/usr/bin/env bash
# timeout: 60
# BPF_PROG_TEST_RUN on the raw_tp thermal variants with crafted arguments:
# trend, thresholds from trip points, hysteresis, headroom, device mapping,
# the ring buffer and its rate limit (tools/bench-pressure selftest).
cd "$(dirname "$0")/../.."
exec "${O:-build}/tools/bench-pressure" selftest
