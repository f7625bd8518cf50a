// expect: matrix types (floatCxR, halfCxR, matrix<T, C, R>) are not supported
#include "mgsim_types.h"
void k() { float4x4 m; (void)m; }
