// expect: call of overloaded 'pow(float&, int)' is ambiguous
// Known limitation, kept as a test: the C++ wrapper <math.h> injects std:: templates for integer
// arguments into the global namespace, which tie with metal::pow. Use <cmath> in the prelude.
#include <math.h>
#include "mgsim_math.h"
using namespace metal;
float k(float x) { return pow(x, 2); }
