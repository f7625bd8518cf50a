#!/usr/bin/env bash
# Builds and runs the MSL prelude tests (Sources/MSLSim/prelude/mgsim_{types,math,atomic,
# simdgroup_matrix}.h): every test program with g++ (warnings are errors) and, unless --no-clang or
# clang++ is missing, with clang++ (optimisation levels per compiler below; isa_paths also with the
# AVX2/FMA macros); then the compile-fail cases (each must fail with its message under g++ and be
# rejected by clang++);
# then prints how long the headers take to compile. Ends with "prelude: N passed, N failed" (the
# line .ci/run adds to its totals). Exits nonzero on any failure.
#
# usage: test/native/prelude/run.sh [--exhaustive] [--no-clang] [--no-timing]
#   --exhaustive  also converts all 2^32 floats to half and bfloat and compares exp/exp2 of all 2^32
#                 floats with libm's (about 8 CPU minutes)
set -u
export LC_ALL=C  # ASCII quotes in compiler messages

here=$(cd "$(dirname "$0")" && pwd)
prelude=$(cd "$here/../../../Sources/MSLSim/prelude" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mgsim-prelude-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT

exhaustive=0 clang=1 timing=1
for a in "$@"; do
  case "$a" in
    --exhaustive) exhaustive=1 ;;
    --no-clang) clang=0 ;;
    --no-timing) timing=0 ;;
    *) echo "usage: $0 [--exhaustive] [--no-clang] [--no-timing]" >&2; exit 2 ;;
  esac
done
compilers=(g++)
if [ "$clang" = 1 ] && command -v clang++ >/dev/null 2>&1; then compilers+=(clang++); fi

# name:g++ level:clang++ level[:variant]. Each program runs under both compilers; where its checks
# hold at every level (values and types, no timing), one compiler builds it at -O0 and the other at
# -O2 — the simulator compiles kernels at both (tier 0 at -O0, tier-up at -O1/-O2), so together they
# cover more than -O2 twice, for less CPU. fp16_conversions and atomics stay at -O2 under both (the
# first is dominated by its run time, the second's interleavings depend on code generation); the
# swizzle sweep is ~1000 tiny functions, -O0 under both keeps its build short.
# A variant adds the macros the simulator's compile driver defines on CPUs with the extension
# (Sources/MSLSim/compile.cpp, base_flags): isa_paths then builds the prelude's AVX2/FMA code with
# each compiler, and runs it where this CPU has the extension (else it is built only).
tests=(fp16_conversions:-O2:-O2 vector_types:-O2:-O0 swizzles:-O0:-O0 math_functions:-O2:-O0 atomics:-O2:-O2
       simdgroup_matrix:-O2:-O0 value_proxies:-O0:-O2 isa_paths:-O2:-O2:avx2 isa_paths:-O2:-O2:avx2+fma)
flags=(-std=c++17 -Wall -Wextra -Werror -pthread)
cpu_has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }

prog_pass=0 prog_fail=0 checks_pass=0 checks_fail=0 failed=()
for cxx in "${compilers[@]}"; do
  for t in "${tests[@]}"; do
    IFS=: read -r name gcc_opt clang_opt variant <<<"$t"
    if [ "$cxx" = g++ ]; then opt=$gcc_opt; else opt=$clang_opt; fi
    extra=() runnable=1 label="$cxx $opt"
    case "$variant" in
      "") ;;
      # -ffp-contract=off as the simulator compiles (it only matters where a product meets an add).
      avx2) extra=(-DMGSIM_HAVE_AVX2=1 -ffp-contract=off) label+=" AVX2"; cpu_has avx2 || runnable=0 ;;
      avx2+fma) extra=(-DMGSIM_HAVE_AVX2=1 -DMGSIM_HAVE_FMA=1 -ffp-contract=off) label+=" AVX2 FMA"
                cpu_has avx2 && cpu_has fma || runnable=0 ;;
      *) echo "run.sh: unknown variant $variant" >&2; exit 2 ;;
    esac
    exe="$work/$name${variant:+.$variant}.$cxx"
    if ! "$cxx" "${flags[@]}" "$opt" "${extra[@]}" "$here/$name.cpp" -o "$exe" >"$work/build.log" 2>&1; then
      echo "BUILD FAILED: $name ($label)"
      head -30 "$work/build.log"
      prog_fail=$((prog_fail + 1)) failed+=("$name${variant:+[$variant]}/$cxx(build)")
      continue
    fi
    if [ "$runnable" = 0 ]; then
      prog_pass=$((prog_pass + 1))
      echo "ok    $name: built ($label; not run: this CPU lacks the extension)"
      continue
    fi
    args=()
    [ "$exhaustive" = 1 ] && { [ "$name" = fp16_conversions ] || [ "$name" = math_functions ]; } && [ "$cxx" = g++ ] && args=(--exhaustive)
    if "$exe" "${args[@]}" >"$work/run.log" 2>&1; then rc=0; else rc=$?; fi
    summary=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed$" "$work/run.log" | tail -1)
    if [ "$rc" = 0 ] && [ -n "$summary" ]; then
      prog_pass=$((prog_pass + 1))
      echo "ok    $summary ($label)"
    else
      prog_fail=$((prog_fail + 1)) failed+=("$name${variant:+[$variant]}/$cxx")
      echo "FAIL  $name ($label, exit $rc)"
      grep -v '^ok' "$work/run.log" | head -30
    fi
    if [ -n "$summary" ]; then
      p=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/' <<<"$summary")
      f=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/' <<<"$summary")
      checks_pass=$((checks_pass + p)) checks_fail=$((checks_fail + f))
    fi
  done
done

# Compile-fail cases: the first line of each file is `// expect: <text g++ must print>`.
# Most cases start with the same header, so each compiler parses it once into a precompiled header
# (half the CPU of these 50 compiles). The case then compiles as before: g++ takes X.h.gch in place
# of the first #include "X.h" (only there, and only if built with the same flags); clang++ loads
# X.h.pch before the file, whose own #include "X.h" is then a no-op (include guard). A case whose
# first include is another header compiles without one. If a PCH cannot be built, none is used.
pch_headers=(mgsim_types.h mgsim_atomic.h mgsim_simdgroup_matrix.h)
mkdir -p "$work/pch.g++" "$work/pch.clang++"
for h in "${pch_headers[@]}"; do
  for cxx in "${compilers[@]}"; do
    case "$cxx" in
      g++) g++ -std=c++17 -x c++-header "$prelude/$h" -o "$work/pch.g++/$h.gch" >/dev/null 2>&1 || rm -f "$work/pch.g++/$h.gch" ;;
      *) "$cxx" -std=c++17 -x c++-header "$prelude/$h" -o "$work/pch.$cxx/$h.pch" >/dev/null 2>&1 || rm -f "$work/pch.$cxx/$h.pch" ;;
    esac
  done
done
cf_pass=0 cf_fail=0
for f in "$here"/compile_fail/*.cpp; do
  expect=$(head -1 "$f" | sed 's#^// expect: ##')
  first=$(grep -m1 '^#include' "$f" | sed -n 's/^#include "\(.*\)"$/\1/p')
  for cxx in "${compilers[@]}"; do
    pch=()
    if [ "$cxx" = g++ ]; then pch=(-I"$work/pch.g++")
    elif [ -n "$first" ] && [ -f "$work/pch.$cxx/$first.pch" ]; then pch=(-include-pch "$work/pch.$cxx/$first.pch")
    fi
    if out=$("$cxx" -std=c++17 -fsyntax-only "${pch[@]}" -I"$prelude" "$f" 2>&1); then
      ok=0  # it compiled
    elif [ "$cxx" = g++ ]; then
      grep -qF -- "$expect" <<<"$out" && ok=1 || ok=0
    else
      ok=1  # clang words some diagnostics differently; it must still reject the code
    fi
    if [ "$ok" = 1 ]; then
      cf_pass=$((cf_pass + 1))
    else
      cf_fail=$((cf_fail + 1)) failed+=("compile_fail/$(basename "$f")/$cxx")
      echo "FAIL  compile_fail/$(basename "$f") ($cxx): expected an error containing: $expect"
      grep -i error <<<"$out" | head -5
    fi
  done
done
echo "compile-fail: $cf_pass passed, $cf_fail failed"

# Compile time of the headers (what every kernel library pays without a precompiled header): the
# headers alone, and a translation unit that uses the common vector types.
if [ "$timing" = 1 ]; then
  printf '#include "mgsim_simdgroup_matrix.h"\n' >"$work/headers.cpp"
  cat >"$work/kernel_like.cpp" <<'EOF'
#include "mgsim_simdgroup_matrix.h"
using namespace metal;
float4 k(float4 a, uint3 tid, half4 h, int2 i, float2 f, float3 v) {
  return exp(a) * float4(h) + float(tid.x) + float(i.y) + length(v) + dot(f, f.yx) + a.wzyx;
}
EOF
  # CPU time (user + system) of the compiler, best of 5, in ms: wall time on a shared machine mostly
  # measures the other jobs. Falls back to wall time without python3.
  cpu_ms() {
    if command -v python3 >/dev/null 2>&1; then
      python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(int((r.ru_utime + r.ru_stime) * 1000) if rc == 0 else -1)' "$@"
    else
      local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo -1; return; }; e=$(date +%s%N); echo $(((e - s) / 1000000))
    fi
  }
  best() {
    local b=999999 t
    for _ in 1 2 3 4 5; do
      t=$(cpu_ms "$@"); [ "$t" -lt 0 ] && { echo "failed"; return; }
      [ "$t" -lt "$b" ] && b=$t
    done
    echo "$b"
  }
  for cxx in "${compilers[@]}"; do
    base=$(printf '#include <type_traits>\n#include <limits>\n#include <cstdint>\n' >"$work/base.cpp"; best "$cxx" -std=c++17 -O2 -fsyntax-only "$work/base.cpp")
    h=$(best "$cxx" -std=c++17 -O2 -fsyntax-only -I"$prelude" "$work/headers.cpp")
    k=$(best "$cxx" -std=c++17 -O2 -fsyntax-only -I"$prelude" "$work/kernel_like.cpp")
    echo "compile time ($cxx -std=c++17 -O2 -fsyntax-only, CPU ms, best of 5): headers ${h}, kernel-like TU ${k} (standard headers alone ${base})"
  done
fi

echo "prelude tests: $prog_pass programs passed, $prog_fail failed; $checks_pass checks passed, $checks_fail failed; compile-fail $cf_pass passed, $cf_fail failed"
# The line CI adds to its totals: a test is a program run by one compiler (with all its checks) or
# a compile-fail case for one compiler.
echo "prelude: $((prog_pass + cf_pass)) passed, $((prog_fail + cf_fail + checks_fail)) failed"
if [ "$prog_fail" -ne 0 ] || [ "$checks_fail" -ne 0 ] || [ "$cf_fail" -ne 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
exit 0
