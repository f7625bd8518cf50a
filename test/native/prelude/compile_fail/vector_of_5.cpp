// expect: only vectors of 2, 3 or 4 components are supported
#include "mgsim_types.h"
void k() { metal::vec<float, 5> v; (void)v; }
