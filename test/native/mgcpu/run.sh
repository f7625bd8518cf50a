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
"$work/test_mgcpu"
