// expect: a swizzle that repeats a component cannot be assigned to
#include "mgsim_types.h"
void k() { float4 v(0); v.xx = float2(1, 2); }
