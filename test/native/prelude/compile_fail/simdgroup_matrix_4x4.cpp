// expect: simdgroup_matrix is 8x8 only
#include "mgsim_simdgroup_matrix.h"
void k() { metal::simdgroup_matrix<float, 4, 4> m; (void)m; }
