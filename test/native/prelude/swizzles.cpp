// Every 2-, 3- and 4-component swizzle of 2-, 3- and 4-component vectors, in both component sets
// (xyzw, rgba): each read returns the named components in order; each swizzle with distinct
// components, when assigned, writes exactly those components and leaves the others alone.
// The name lists come from the prelude's own set macros, but the expected indices are the macro
// arguments, checked against the vector's operator[]. (A separate file: ~1000 swizzles make a slow
// translation unit, compiled at -O0 by run.sh.)
#include "../../../Sources/MSLSim/prelude/mgsim_types.h"
#include "check.h"

namespace mgsim {
unsigned simd_lane_id() { return 0; }
}

namespace {

// A read is the implicit conversion kernels use (`float2 a = v.zx;`). Not through to_vec, which
// converts the same way (its swizzle branch is one generic line, checked in main and by the
// swizzle arithmetic in vector_types.cpp): under g++ every function returning a 4-vector by value
// costs milliseconds to compile (the ABI walks the vector's ~340-member union), and a to_vec per
// swizzle type doubled this file's build.
template <class V, class S>
void expect_read(const V &v, const S &s, const int *idx) {
  const metal::vec<mgsim::lang::velem_t<V>, mgsim::lang::vsize_v<S>> r = s;
  bool ok = true;
  for (int i = 0; i < mgsim::lang::vsize_v<S>; ++i) ok = ok && r[i] == v[idx[i]];
  CHECK_F(ok, "read of a %d-component swizzle of a %d-vector starting at component %d", mgsim::lang::vsize_v<S>,
          mgsim::lang::vsize_v<V>, idx[0]);
}
template <class V, class S>
void expect_write(V &v, S &s, const int *idx) {
  if constexpr (mgsim::lang::swz_distinct(mgsim::lang::vec_traits<S>::code, mgsim::lang::vsize_v<S>)) {
    constexpr int M = mgsim::lang::vsize_v<S>, N = mgsim::lang::vsize_v<V>;
    using T = mgsim::lang::velem_t<V>;
    const V before = v;
    metal::vec<T, M> val;
    for (int i = 0; i < M; ++i) val[i] = T(100 + i);
    s = val;
    bool ok = true, touched[4] = {false, false, false, false};
    for (int i = 0; i < M; ++i) {
      ok = ok && v[idx[i]] == T(100 + i);
      touched[idx[i]] = true;
    }
    for (int i = 0; i < N; ++i) ok = ok && (touched[i] || v[i] == before[i]);
    CHECK_F(ok, "write of a %d-component swizzle of a %d-vector starting at component %d", M, N, idx[0]);
    v = before;
  }
}

#define T_A(c0, i0, S, N, V) S##_2(T_B, S, N, V, c0, i0)
#define T_B(c1, i1, S, N, V, c0, i0)                      \
  {                                                       \
    const int ix[] = {i0, i1};                            \
    expect_read(V, V.c0##c1, ix);    \
    expect_write(V, V.c0##c1, ix);                        \
  }                                                       \
  S##_3(T_C, S, N, V, c0, i0, c1, i1)
#define T_C(c2, i2, S, N, V, c0, i0, c1, i1)                  \
  {                                                           \
    const int ix[] = {i0, i1, i2};                            \
    expect_read(V, V.c0##c1##c2, ix);    \
    expect_write(V, V.c0##c1##c2, ix);                        \
  }                                                           \
  S##_4(T_D, N, V, c0, i0, c1, i1, c2, i2)
#define T_D(c3, i3, N, V, c0, i0, c1, i1, c2, i2)                 \
  {                                                               \
    const int ix[] = {i0, i1, i2, i3};                            \
    expect_read(V, V.c0##c1##c2##c3, ix);    \
    expect_write(V, V.c0##c1##c2##c3, ix);                        \
  }
#define TEST_ALL_SWIZZLES(S, N, V) S##_1(T_A, S, N, V)

void four_xyzw() {
  float4 v(10, 11, 12, 13);
  TEST_ALL_SWIZZLES(MGSIM_XYZW, 4, v)
}
void four_rgba() {
  float4 v(10, 11, 12, 13);
  TEST_ALL_SWIZZLES(MGSIM_RGBA, 4, v)
}
void three() {
  float3 v(20, 21, 22);
  TEST_ALL_SWIZZLES(MGSIM_XYZ, 3, v)
  TEST_ALL_SWIZZLES(MGSIM_RGB, 3, v)
}
void two() {
  int2 v(30, 31);
  TEST_ALL_SWIZZLES(MGSIM_XY, 2, v)
  TEST_ALL_SWIZZLES(MGSIM_RG, 2, v)
}

}  // namespace

int main() {
  four_xyzw();
  four_rgba();
  three();
  two();
  // to_vec of a swizzle (what the vector operators apply to swizzle operands).
  const float4 v(10, 11, 12, 13);
  const int3 i3(20, 21, 22);
  const float4 a = mgsim::lang::to_vec(v.wzyx);
  const float2 b = mgsim::lang::to_vec(v.xz);
  const int3 c = mgsim::lang::to_vec(i3.zzx);
  const float3 d = mgsim::lang::to_vec(v.gbr);
  CHECK(a[0] == 13 && a[1] == 12 && a[2] == 11 && a[3] == 10 && b[0] == 10 && b[1] == 12);
  CHECK(c[0] == 22 && c[1] == 22 && c[2] == 20 && d[0] == 11 && d[1] == 12 && d[2] == 10);
  // 4 + 8 + 16 reads of a 2-vector, 9 + 27 + 81 of a 3-vector, 16 + 64 + 256 of a 4-vector, per set;
  // writes: 2, 6 + 6, 12 + 24 + 24 distinct ones.
  const long reads = 2 * (28 + 117 + 336), writes = 2 * (2 + 12 + 60);
  CHECK_F(check::passed == reads + writes + 2, "expected %ld checks, ran %ld", reads + writes + 2, check::passed);
  return check::finish("swizzles");
}
