// expect: must have the same size
#include "mgsim_types.h"
uint k(half h) { return metal::as_type<uint>(h); }
