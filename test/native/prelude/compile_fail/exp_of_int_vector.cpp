// expect: no matching function for call to 'exp(int4&)'
#include "mgsim_math.h"
using namespace metal;
float4 k(int4 v) { return exp(v); }
