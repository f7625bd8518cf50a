// expect: no match for 'operator+'
#include "mgsim_types.h"
float4 k(float4 a, int4 b) { return a + b; }
