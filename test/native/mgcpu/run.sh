#!/usr/bin/env bash
# Builds and runs the native CPU kernels' C ABI checks (test_mgcpu.cpp) against the runtime library
# built by `swift build -c release` (Sources/MGCpu is linked into it): with clang++ (or g++),
# warnings as errors. Ends with "mgcpu: N passed, N failed" (the line .ci/run adds to its totals).
#
# usage: test/native/mgcpu/run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
lib="$root/.build/release"
if [ ! -e "$lib/libMetalGradRuntime.so" ] && [ ! -e "$lib/libMetalGradRuntime.dylib" ]; then
  echo "no runtime library in $lib: run swift build -c release first"
  echo "mgcpu: 0 passed, 1 failed"
  exit 1
fi
cxx=clang++
command -v "$cxx" >/dev/null 2>&1 || cxx=g++
work=$(mktemp -d "${TMPDIR:-/tmp}/mgcpu-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! "$cxx" -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I"$root/Sources/MGCpu/include" "$here/test_mgcpu.cpp" \
  -L"$lib" -lMetalGradRuntime -Wl,-rpath,"$lib" -o "$work/test_mgcpu" >"$work/build.log" 2>&1; then
  echo "BUILD FAILED: test_mgcpu ($cxx)"
  head -30 "$work/build.log"
  echo "mgcpu: 0 passed, 1 failed"
  exit 1
fi
# The worker pool itself (pool.cpp compiled in, stressed with back-to-back jobs); a hang is a failure.
pool_passed=0 pool_failed=1
if "$cxx" -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I"$root/Sources/MGCpu" -I"$root/Sources/MGCpu/include" \
  "$here/test_pool.cpp" "$root/Sources/MGCpu/pool.cpp" -o "$work/test_pool" >"$work/pool-build.log" 2>&1; then
  pool_out=$(timeout 120 "$work/test_pool" 2>&1)
  echo "$pool_out" | grep -v '^pool: '
  summary=$(echo "$pool_out" | grep -E '^pool: [0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -n "$summary" ]; then
    pool_passed=$(sed -E 's/pool: ([0-9]+) passed.*/\1/' <<<"$summary")
    pool_failed=$(sed -E 's/.*, ([0-9]+) failed$/\1/' <<<"$summary")
  else
    echo "FAIL: the pool stress test stopped without a summary (a hang or a crash)"
  fi
else
  echo "BUILD FAILED: test_pool ($cxx)"
  head -30 "$work/pool-build.log"
fi
out=$("$work/test_mgcpu" 2>&1)
status=$?
echo "$out" | grep -vE '^mgcpu: [0-9]+ passed, [0-9]+ failed$'
summary=$(echo "$out" | grep -E '^mgcpu: [0-9]+ passed, [0-9]+ failed$' | tail -1)
if [ -z "$summary" ]; then
  echo "mgcpu: $pool_passed passed, $((pool_failed + 1)) failed"
  exit 1
fi
passed=$(sed -E 's/mgcpu: ([0-9]+) passed.*/\1/' <<<"$summary")
failed=$(sed -E 's/.*, ([0-9]+) failed$/\1/' <<<"$summary")
echo "mgcpu: $((passed + pool_passed)) passed, $((failed + pool_failed)) failed"
[ "$status" -eq 0 ] && [ "$pool_failed" -eq 0 ]
