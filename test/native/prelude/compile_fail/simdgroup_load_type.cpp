// expect: the source's element type must be the matrix's element type
#include "mgsim_simdgroup_matrix.h"
using namespace metal;
void k(const half *p) { simdgroup_float8x8 m; simdgroup_load(m, p); }
