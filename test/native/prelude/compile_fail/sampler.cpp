// expect: sampler_is_not_supported_by_the_metalgrad_simulator
#include "mgsim_types.h"
void k(metal::sampler s) { (void)s; }
