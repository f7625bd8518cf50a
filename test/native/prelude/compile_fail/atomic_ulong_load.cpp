// expect: atomic<ulong> supports only atomic_max_explicit and atomic_min_explicit
#include "mgsim_atomic.h"
using namespace metal;
ulong k(atomic_ulong *a) { return atomic_load_explicit(a, memory_order_relaxed); }
