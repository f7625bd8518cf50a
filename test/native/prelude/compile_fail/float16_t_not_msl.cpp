// expect: 'float16_t' does not name a type
#include "mgsim_simdgroup_matrix.h"
float16_t k();
