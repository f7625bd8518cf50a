// expect: atomic<ulong> has no fetch-and-modify functions
#include "mgsim_atomic.h"
using namespace metal;
ulong k(atomic_ulong *a) { return atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed); }
