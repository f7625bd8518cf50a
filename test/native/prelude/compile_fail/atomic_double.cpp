// expect: atomic<T> supports int, uint, float, bool and ulong
#include "mgsim_atomic.h"
void k() { metal::atomic<double> a; (void)a; }
