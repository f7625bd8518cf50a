// expect: to non-scalar type 'vec<int,[...]>' requested
#include "mgsim_types.h"
void k(float4 f) { int4 i = f; (void)i; }
