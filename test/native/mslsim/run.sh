#!/usr/bin/env bash
# Builds the MSLSim sources directly (no SwiftPM) and runs the simulator's C++ harness programs.
# Usage: test/native/mslsim/run.sh [test-name ...]    (from anywhere)
# Prints one line per check, then "mslsim: N passed, N failed" (the line .ci/run adds to its
# totals); exits nonzero on any failure. MSLSIM_TEST_BUILD sets the build directory.
# MSLSIM_OBJECTS=DIR (e.g. .build/release/MSLSim.build) links the simulator objects SwiftPM built
# there instead of compiling the sources again, when each is newer than every file its .d lists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
src="$root/Sources/MSLSim"
out="${MSLSIM_TEST_BUILD:-${TMPDIR:-/tmp}/mslsim-test-build-$(id -u)}"
mkdir -p "$out"
CXX_HOST="${CXX_HOST:-g++}"
# embed.c needs C23 #embed: the Swift toolchain's clang has it.
CC_EMBED="${CC_EMBED:-}"
if [ -z "$CC_EMBED" ]; then
  for c in /opt/swift/usr/bin/clang clang; do
    if command -v "$c" >/dev/null 2>&1; then CC_EMBED="$c"; break; fi
  done
fi
[ -n "$CC_EMBED" ] || { echo "run.sh: no clang with #embed found (set CC_EMBED)"; exit 2; }

# -O1 without debug information (MSLSIM_TEST_OPT overrides, e.g. "-O2 -g"): the harness tests what
# the simulator does, not how fast its driver runs; -O2 -g took 44 of the library's and 28 of the
# programs' CPU seconds, -O1 18 and 16 (the kernels it compiles keep the driver's own flags).
flags=(-std=c++20 ${MSLSIM_TEST_OPT:--O1} -Wall -Wextra -I"$src" -I"$src/include")
# The simulator objects SwiftPM built (MSLSIM_OBJECTS), if every source has one that is newer than
# every file its dependency list (.d) names: .ci/run runs this after `swift build`, where the same
# sources compiled a minute before (-O2, clang, as the runtime library ships them) and compiling
# them again here cost ~16 CPU s. Anything missing or stale: the sources compile here.
swiftpm_objects() {
  local dir=$1 f o dep own
  objs=()
  for f in "$(cd "$src" && pwd -P)"/*.cpp "$(cd "$src" && pwd -P)/embed.c"; do
    o="$dir/$(basename "$f").o"
    [ -f "$o" ] && [ -f "${o%.o}.d" ] || return 1
    own=0  # the object must be this checkout's source's
    for dep in $(sed -e '1s/^[^:]*://' -e 's/\\$//' "${o%.o}.d"); do
      [ -e "$dep" ] && [ ! "$dep" -nt "$o" ] || return 1
      [ "$dep" = "$f" ] && own=1
    done
    [ $own = 1 ] || return 1
    objs+=("$o")
  done
}
objs=()
if [ -n "${MSLSIM_OBJECTS:-}" ] && swiftpm_objects "$MSLSIM_OBJECTS"; then
  echo "mslsim: the simulator objects of $MSLSIM_OBJECTS (swift build)"
else
  [ -n "${MSLSIM_OBJECTS:-}" ] && echo "mslsim: $MSLSIM_OBJECTS has no up-to-date simulator objects: compiling the sources"
  objs=()
  for f in "$src"/*.cpp; do
    o="$out/$(basename "${f%.cpp}").o"
    if [ ! -f "$o" ] || [ -n "$(find "$src" -newer "$o" \( -name '*.h' -o -name "$(basename "$f")" \) -print -quit)" ]; then
      "$CXX_HOST" "${flags[@]}" -fPIC -c "$f" -o "$o"
    fi
    objs+=("$o")
  done
  # embed.c embeds the prelude headers and the translator's source (hashed into the cache key).
  if [ ! -f "$out/embed.o" ] || [ -n "$(find "$src" -newer "$out/embed.o" \( -name '*.h' -o -name 'embed.c' -o -name 'translate.cpp' -o -name 'workitem.cpp' -o -name 'workitem.h' -o -name 'lex.cpp' -o -name 'lex.h' \) -print -quit)" ]; then
    "$CC_EMBED" -std=c2x -Wall -Wextra -c "$src/embed.c" -o "$out/embed.o"
  fi
  objs+=("$out/embed.o")
fi
# A deterministic archive (no member dates), replaced only when its members change: the programs
# relink only then.
rm -f "$out/libmslsim.a.new"
ar rcsD "$out/libmslsim.a.new" "${objs[@]}"
if cmp -s "$out/libmslsim.a.new" "$out/libmslsim.a"; then rm "$out/libmslsim.a.new"; else mv "$out/libmslsim.a.new" "$out/libmslsim.a"; fi

# Every program starts with harness.h, whose standard headers are most of what it parses: with g++
# it is precompiled once (about 4.5 of the programs' 12 CPU s). A header of its own includes it, so
# the programs' own #include "harness.h" is the same file (#pragma once).
pch=()
if "$CXX_HOST" --version 2>/dev/null | grep -q 'Free Software Foundation'; then
  pch_h="$out/harness_pch.h"
  printf '#include "%s/harness.h"\n' "$here" >"$pch_h.new"
  cmp -s "$pch_h.new" "$pch_h" && rm "$pch_h.new" || mv "$pch_h.new" "$pch_h"
  if [ ! -f "$pch_h.gch" ] || [ "$pch_h" -nt "$pch_h.gch" ] || [ "$here/harness.h" -nt "$pch_h.gch" ] ||
     [ "$src/include/MSLSim.h" -nt "$pch_h.gch" ]; then
    "$CXX_HOST" "${flags[@]}" -x c++-header "$pch_h" -o "$pch_h.gch"
  fi
  pch=(-include "$pch_h" -Winvalid-pch)
fi

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  for t in "$here"/test_*.cpp; do tests+=("$(basename "${t%.cpp}")"); done
fi
# The harnesses read shared kernel text (the guide's kernel bodies) from this checkout's fixtures.
export MSLSIM_FIXTURES="$root/test/fixtures"
# A fresh cache per run unless MG_SIM_CACHE is set, so the cache tests start cold.
if [ -z "${MG_SIM_CACHE:-}" ]; then
  export MG_SIM_CACHE="$out/cache-$$"
  trap 'rm -rf "$MG_SIM_CACHE"' EXIT
fi
passed=0; failed=0
for t in "${tests[@]}"; do
  exe="$out/$t"
  if [ ! -f "$exe" ] || [ "$here/$t.cpp" -nt "$exe" ] || [ "$here/harness.h" -nt "$exe" ] || [ "$out/libmslsim.a" -nt "$exe" ] ||
     { [ ${#pch[@]} -gt 0 ] && [ "$pch_h.gch" -nt "$exe" ]; }; then
    "$CXX_HOST" "${flags[@]}" "${pch[@]}" "$here/$t.cpp" "$out/libmslsim.a" -ldl -lpthread -o "$exe"
  fi
  log="$out/$t.log"
  set +e
  MSLSIM_TEST_EXE="$exe" timeout 600 "$exe" >"$log" 2>&1
  rc=$?
  set -e
  cat "$log"
  p=$(grep -c '^PASS ' "$log" || true); f=$(grep -c '^FAIL ' "$log" || true)
  passed=$((passed + p)); failed=$((failed + f))
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $t exited with status $rc"; failed=$((failed + 1)); fi
done
echo "mslsim: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
