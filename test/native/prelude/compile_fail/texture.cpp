// expect: textures (texture2d) are not supported
#include "mgsim_types.h"
using namespace metal;
void k(texture2d<float, access::read> t) { (void)t; }
