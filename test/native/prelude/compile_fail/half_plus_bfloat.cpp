// expect: use of deleted function
#include "mgsim_types.h"
float k(half a, bfloat b) { return a + b; }
