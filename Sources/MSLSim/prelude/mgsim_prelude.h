// mgsim_prelude.h — the root of the MSL prelude. Every translated kernel library is compiled with
// this header included first (precompiled when the compiler supports it).
//
// Order matters: the language types, math, atomics and simdgroup matrices come first (the
// language-types part of the prelude), then the execution layer, which builds on them.
#ifndef MGSIM_PRELUDE_H
#define MGSIM_PRELUDE_H

// <cmath>, not <math.h>: libstdc++'s <math.h> injects std::'s integer-argument templates into the
// global namespace, where they tie with metal::'s (pow(x, 2), floor(i), sqrt(2), fmax(x, 0)).
// Without libstdc++'s C++17 special functions (std::beta, std::riemann_zeta ...: not MSL), whose
// templates its <cmath> instantiates at the end of every translation unit: 15 ms of each compile.
#ifndef _GLIBCXX_BITS_SPECFUN_H
#define _GLIBCXX_BITS_SPECFUN_H 1
#endif
#include <cmath>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <limits>
#include <type_traits>

#include "mgsim_types.h"
#include "mgsim_math.h"
#include "mgsim_atomic.h"
#include "mgsim_simdgroup_matrix.h"
#include "mgsim_exec.h"
#include "mgsim_wi.h"

namespace metal {}
// MSL code may call metal:: functions unqualified without a using-directive; Metal's compiler
// accepts that, so the prelude does too.
using namespace metal;

#endif  // MGSIM_PRELUDE_H
