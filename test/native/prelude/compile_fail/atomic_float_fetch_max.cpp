// expect: atomic<float> has no fetch_min / fetch_max
#include "mgsim_atomic.h"
using namespace metal;
float k(atomic_float *a) { return atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed); }
