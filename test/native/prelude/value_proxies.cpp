// Value proxies: the execution layer's checked-mode pointers return element references (classes
// that convert to T and declare `using mgsim_value_type = T;`) instead of T&. Operators and library
// functions must treat them as values of T, so kernels compile the same in checked mode.
#include <cmath>

#include "../../../Sources/MSLSim/prelude/mgsim_math.h"
#include "check.h"

namespace mgsim {
unsigned simd_lane_id() { return 0; }

// Shaped like the execution layer's elem_ref: converts to T, assignable from T, counts accesses.
inline int g_reads = 0, g_writes = 0;
template <class T>
struct elem_proxy {
  using mgsim_value_type = T;
  T *p;
  operator T() const {
    ++g_reads;
    return *p;
  }
  const elem_proxy &operator=(const T &v) const {
    ++g_writes;
    *p = v;
    return *this;
  }
};
template <class T>
struct checked_ptr {
  T *p;
  elem_proxy<T> operator[](size_t i) const { return elem_proxy<T>{p + i}; }
};
}  // namespace mgsim

using namespace metal;
using mgsim::checked_ptr;

int main() {
  float fs[4] = {0.5f, -2.0f, 3.0f, 4.0f};
  half hs[4] = {half(1.5f), half(2.0f), half(-0.25f), half(0.0f)};
  float4 vs[2] = {float4(1, 2, 3, 4), float4(-1, 0.5f, 2, 8)};
  packed_float3 ps[1] = {packed_float3(float3(7, 8, 9))};
  int is[2] = {-5, 12};
  bool bs[2] = {true, false};
  const checked_ptr<float> f{fs};
  const checked_ptr<half> h{hs};
  const checked_ptr<float4> v{vs};
  const checked_ptr<packed_float3> p{ps};
  const checked_ptr<int> i{is};
  const checked_ptr<bool> b{bs};

  // scalar functions and operators
  CHECK(exp(f[0]) == exp(0.5f) && metal::exp(f[1]) == exp(-2.0f) && max(f[1], 0) == 0.0f && clamp(f[2], 0, 1) == 1.0f);
  CHECK(pow(f[2], 2) == 9.0f && fma(f[0], f[2], f[3]) == 5.5f && abs(f[1]) == 2.0f && isnan(f[0]) == false);
  const half hsum = h[0] + h[1];  // half + half through proxies stays half
  static_assert(std::is_same<decltype(h[0] + h[1]), half>::value && std::is_same<decltype(h[0] * 2.0f), float>::value, "types");
  CHECK(float(hsum) == 3.5f && float(-h[2]) == 0.25f && float(h[0] * 2) == 3.0f && h[1] > h[0] && float(exp(h[3])) == 1.0f);
  CHECK(max(i[0], 0) == 0 && metal::abs(i[0]) == 5 && clz(uint(i[1])) == 28u && extract_bits(i[1], 2, 2) == -1);  // 0b11, sign-extended
  CHECK(select(1.0f, 2.0f, b[0]) == 2.0f && select(f[0], f[1], b[1]) == 0.5f);
  half hacc = half(1);
  hacc += h[0];
  CHECK(float(hacc) == 2.5f);
  // vectors
  const float4 w = v[0] * 2.0f + v[1];
  CHECK(all(w == float4(1, 4.5f, 8, 16)) && dot(v[0], v[1]) == 38.0f && all((v[0] < v[1]) == bool4(false, false, false, true)));
  CHECK(all(-v[1] == float4(1, -0.5f, -2, -8)) && all(exp(v[1]) == exp(vs[1])) && length(v[0]) == length(vs[0]));
  const float4 c = float4(f[0], f[1], 0, 1);
  CHECK(all(c == float4(0.5f, -2, 0, 1)) && all(float4(f[2]) == float4(3)) && all(half4(v[0]) == half4(float4(1, 2, 3, 4))));
  const float3 q = p[0];  // a packed element converts to its vector
  CHECK(all(q == float3(7, 8, 9)) && all(float3(p[0]) + 1.0f == float3(8, 9, 10)));
  v[1] = v[0] + 1.0f;  // writes go through the proxy
  CHECK(all(vs[1] == float4(2, 3, 4, 5)) && mgsim::g_writes == 1 && mgsim::g_reads > 20);
  return check::finish("value_proxies");
}
