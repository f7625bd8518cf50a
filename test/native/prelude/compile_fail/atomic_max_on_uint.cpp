// expect: atomic_max_explicit is the 64-bit modify function, defined for atomic_ulong only
#include "mgsim_atomic.h"
using namespace metal;
void k(atomic_uint *a) { atomic_max_explicit(a, 1u, memory_order_relaxed); }
