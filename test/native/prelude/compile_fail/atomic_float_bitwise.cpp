// expect: atomic<float> has no bitwise operations
#include "mgsim_atomic.h"
using namespace metal;
float k(atomic_float *a) { return atomic_fetch_and_explicit(a, 1.0f, memory_order_relaxed); }
