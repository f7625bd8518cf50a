// mg.fast.metalKernel's initValue: fills an output with one value before the user kernel runs
// (MLX's init_value, a float converted to the output type), so a kernel may update only part of
// its outputs (guide §9.4).
#include "utils.h"

template <typename T>
struct InitValue {
  static MG_FUNC T from(float v) { return static_cast<T>(v); }
};
template <>
struct InitValue<complex64_t> {
  static MG_FUNC complex64_t from(float v) { return make_complex(v, 0.0f); }
};

template <typename T>
[[kernel]] void custom_kernel_init(
    device T* out [[buffer(0)]],
    constant const float& value [[buffer(1)]],
    constant const int64_t& size [[buffer(2)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int64_t i = int64_t(gid.y) * int64_t(grid.x) + int64_t(gid.x);
  if (i < size) out[i] = InitValue<T>::from(value);
}
