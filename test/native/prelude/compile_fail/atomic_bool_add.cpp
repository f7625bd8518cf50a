// expect: atomic<bool> supports only load, store, exchange and compare_exchange
#include "mgsim_atomic.h"
using namespace metal;
bool k(atomic_bool *a) { return atomic_fetch_add_explicit(a, true, memory_order_relaxed); }
