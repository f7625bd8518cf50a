#!/usr/bin/env bash
# The I/O parsers' fuzz properties with a larger budget than CI's (MG_FUZZ_RUNS, default 300 per
# property). Each property prints how many inputs it ran and how many loaded or were rejected.
#   bash scripts/fuzz-io.sh [runs-per-property]      (default 20000; FC_SEED=random explores new cases)
set -euo pipefail
cd "$(dirname "$0")/.."
MG_FUZZ_RUNS="${1:-20000}" exec bun test test/io --timeout 0 -t fuzz
