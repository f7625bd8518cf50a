// expect: simdgroup_matrix holds float, half or bfloat
#include "mgsim_simdgroup_matrix.h"
void k() { metal::simdgroup_matrix<int, 8, 8> m; (void)m; }
