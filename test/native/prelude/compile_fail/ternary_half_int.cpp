// expect: operands to '?:' have different types 'half'
// Known limitation, kept as a test: half converts implicitly to and from int and float, so C++ finds
// the conditional operator ambiguous where MSL would convert the int to half. Write c ? h : half(0).
#include "mgsim_types.h"
half k(bool c, half h) { return c ? h : 0; }
