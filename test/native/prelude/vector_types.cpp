// MSL scalar/vector type rules: sizes and alignments (MSL specification tables), which conversions
// are implicit, result types of mixed arithmetic, constructors, swizzles in use, element-wise
// operators against scalar loops, as_type, numeric_limits, type traits, metal::array and
// metal::uniform. swizzles.cpp checks every swizzle.
#include <climits>
#include <cmath>
#include <cstring>
#include <random>

#include "../../../Sources/MSLSim/prelude/mgsim_math.h"
#include "check.h"

namespace mgsim {
unsigned simd_lane_id() { return 0; }
}

using namespace metal;

// --- sizes and alignments (MSL spec: vector data types and packed vector data types) ---
#define SA(T, SIZE, ALIGN) \
  static_assert(sizeof(T) == SIZE && alignof(T) == ALIGN, #T " has MSL's size and alignment");
SA(half, 2, 2) SA(bfloat, 2, 2)
SA(bool2, 2, 2) SA(bool3, 4, 4) SA(bool4, 4, 4)
SA(char2, 2, 2) SA(char3, 4, 4) SA(char4, 4, 4) SA(uchar2, 2, 2) SA(uchar3, 4, 4) SA(uchar4, 4, 4)
SA(short2, 4, 4) SA(short3, 8, 8) SA(short4, 8, 8) SA(ushort2, 4, 4) SA(ushort3, 8, 8) SA(ushort4, 8, 8)
SA(int2, 8, 8) SA(int3, 16, 16) SA(int4, 16, 16) SA(uint2, 8, 8) SA(uint3, 16, 16) SA(uint4, 16, 16)
SA(long2, 16, 16) SA(long3, 32, 32) SA(long4, 32, 32) SA(ulong2, 16, 16) SA(ulong3, 32, 32) SA(ulong4, 32, 32)
SA(half2, 4, 4) SA(half3, 8, 8) SA(half4, 8, 8) SA(bfloat2, 4, 4) SA(bfloat3, 8, 8) SA(bfloat4, 8, 8)
SA(float2, 8, 8) SA(float3, 16, 16) SA(float4, 16, 16)
SA(packed_char2, 2, 1) SA(packed_char3, 3, 1) SA(packed_char4, 4, 1) SA(packed_uchar3, 3, 1)
SA(packed_short2, 4, 2) SA(packed_short3, 6, 2) SA(packed_short4, 8, 2) SA(packed_ushort3, 6, 2)
SA(packed_int2, 8, 4) SA(packed_int3, 12, 4) SA(packed_int4, 16, 4) SA(packed_uint3, 12, 4)
SA(packed_half2, 4, 2) SA(packed_half3, 6, 2) SA(packed_half4, 8, 2) SA(packed_bfloat3, 6, 2)
SA(packed_float2, 8, 4) SA(packed_float3, 12, 4) SA(packed_float4, 16, 4)
SA(packed_long3, 24, 8) SA(packed_ulong2, 16, 8)
#undef SA
static_assert(std::is_same<metal::vec<float, 4>, float4>::value && std::is_same<vec<uchar, 2>, uchar2>::value, "vec<T, N> names the vector types");
// Threadgroup memory is uninitialised: every type must be trivially default-constructible, and
// trivially copy-constructible/destructible for by-value passing.
template <class T>
constexpr bool plain = std::is_trivially_default_constructible<T>::value && std::is_trivially_copy_constructible<T>::value &&
                       std::is_trivially_destructible<T>::value && std::is_standard_layout<T>::value;
static_assert(plain<half> && plain<bfloat> && std::is_trivially_copyable<half>::value && std::is_trivially_copyable<bfloat>::value, "scalars");
static_assert(plain<float4> && plain<half3> && plain<bool2> && plain<long4> && plain<packed_float3> && plain<uint3>, "vectors");

// --- implicit and explicit conversions ---
static_assert(std::is_convertible<float, half>::value && std::is_convertible<half, float>::value, "half <-> float implicit");
static_assert(std::is_convertible<int, half>::value && std::is_convertible<double, half>::value && std::is_convertible<half, int>::value, "half <-> int");
static_assert(!std::is_convertible<float, bfloat>::value && std::is_constructible<bfloat, float>::value, "float -> bfloat explicit only");
static_assert(!std::is_convertible<int, bfloat>::value && std::is_constructible<bfloat, int>::value, "int -> bfloat explicit only");
static_assert(std::is_convertible<bfloat, float>::value, "bfloat -> float implicit");
static_assert(!std::is_convertible<bfloat, half>::value && std::is_constructible<half, bfloat>::value, "bfloat -> half explicit only");
static_assert(!std::is_convertible<half, bfloat>::value && std::is_constructible<bfloat, half>::value, "half -> bfloat explicit only");
static_assert(std::is_convertible<float, float4>::value && std::is_convertible<int, float4>::value, "scalar -> vector implicit");
static_assert(std::is_convertible<float, half4>::value && !std::is_convertible<float, bfloat4>::value && std::is_constructible<bfloat4, float>::value, "splat follows the scalar rules");
static_assert(!std::is_convertible<int4, float4>::value && std::is_constructible<float4, int4>::value, "vector conversions are explicit");
static_assert(!std::is_convertible<half4, float4>::value && std::is_constructible<float4, half4>::value, "half4 -> float4 explicit");
static_assert(!std::is_constructible<float3, float4>::value && !std::is_constructible<float4, float3>::value, "no truncation/extension by conversion");
static_assert(std::is_convertible<packed_float3, float3>::value && !std::is_convertible<float3, packed_float3>::value &&
                  std::is_constructible<packed_float3, float3>::value && std::is_assignable<packed_float3 &, float3>::value, "packed <-> vector");
static_assert(std::is_convertible<decltype(float4().xy), float2>::value && std::is_convertible<decltype(float4().xyz), float3>::value, "swizzles read as vectors");
static_assert(!std::is_convertible<bool4, bool>::value && !std::is_convertible<float4, float>::value, "vectors are not scalars");

// --- result types (MSL's usual arithmetic conversions) ---
template <class A, class B>
using sum_t = decltype(std::declval<A>() + std::declval<B>());
template <class A, class B, class = void>
struct can_add : std::false_type {};
template <class A, class B>
struct can_add<A, B, std::void_t<sum_t<A, B>>> : std::true_type {};
template <class A, class B, class = void>
struct can_mod : std::false_type {};
template <class A, class B>
struct can_mod<A, B, std::void_t<decltype(std::declval<A>() % std::declval<B>())>> : std::true_type {};
template <class A, class B, class = void>
struct can_and : std::false_type {};
template <class A, class B>
struct can_and<A, B, std::void_t<decltype(std::declval<A>() & std::declval<B>())>> : std::true_type {};
template <class A, class B, class = void>
struct can_shl : std::false_type {};
template <class A, class B>
struct can_shl<A, B, std::void_t<decltype(std::declval<A>() << std::declval<B>())>> : std::true_type {};
#define SAME(E, T) static_assert(std::is_same<decltype(E), T>::value, #E " has type " #T)
SAME(half() + half(), half);
SAME(half() * half(), half);
SAME(half() + float(), float);
SAME(float() - half(), float);
SAME(half() + 1, half);
SAME(2 * half(), half);
SAME(half() / short(2), half);
SAME(half() * 2.0, float);  // an unsuffixed literal is an MSL float
SAME(half() + true, half);
SAME(half() < half(), bool);
SAME(half() == 0, bool);
SAME(half() >= 1.0f, bool);
SAME(-half(), half);
SAME(bfloat() + bfloat(), bfloat);
SAME(bfloat() * 2, bfloat);
SAME(bfloat() + 1.0f, float);
SAME(bfloat() < bfloat(), bool);
SAME(float4() + float4(), float4);
SAME(float4() * 2.0f, float4);
SAME(float4() * 2, float4);
SAME(0.5 * float4(), float4);
SAME(half4() * 2.0f, half4);
SAME(half4() + half(), half4);
SAME(int4() + 1, int4);
SAME(uint4() << 3, uint4);
SAME(uint4() >> int4(), uint4);
SAME(char4() + char4(), char4);  // vectors do not promote
SAME(short2() * short(3), short2);
SAME(float4() < float4(), bool4);
SAME(float4() == 0.0f, bool4);
SAME(int3() & int3(), int3);
SAME(bool2() && bool2(), bool2);
SAME(!float4(), bool4);
SAME(~uint2(), uint2);
SAME(-int4(), int4);
SAME(float4().xy + float4().zw, float2);
SAME(float4().xyz * 2, float3);
SAME(packed_float3() + float3(), float3);
SAME(as_type<uint>(1.0f), uint);
static_assert(!can_add<float4, int4>::value && !can_add<float4, float3>::value && !can_add<half4, float4>::value, "no implicit vector conversions");
static_assert(!can_add<half, bfloat>::value && !can_add<bfloat, half>::value && !can_add<half4, bfloat>::value, "half and bfloat do not mix");
static_assert(!can_add<int4, float>::value && can_add<float4, int>::value && can_add<uint4, int>::value, "float scalars do not combine with integer vectors");
static_assert(!can_mod<float4, float4>::value && can_mod<int4, int4>::value && !can_mod<half, half>::value, "% is for integers");
static_assert(!can_and<float4, float4>::value && can_and<bool2, bool2>::value && can_and<uint4, uint>::value, "bitwise ops are for integers and bools");
static_assert(!can_shl<float4, int>::value && !can_add<bool4, bool4>::value, "no shifts of floats, no arithmetic on bool vectors");

namespace {

// --- constructors ---
void test_constructors() {
  const float4 z(0);
  CHECK(z.x == 0 && z.y == 0 && z.z == 0 && z.w == 0);
  const float4 a(1, 2, 3, 4);
  CHECK(a.x == 1 && a.y == 2 && a.z == 3 && a.w == 4);
  const float2 f2(5, 6);
  const float3 f3(7, 8, 9);
  const float4 b(f2, f3.xy);
  CHECK(b.x == 5 && b.y == 6 && b.z == 7 && b.w == 8);
  const float4 c(f3, 1);
  CHECK(c.x == 7 && c.y == 8 && c.z == 9 && c.w == 1);
  const float4 d(1, f2, 2.5);
  CHECK(d.x == 1 && d.y == 5 && d.z == 6 && d.w == 2.5f);
  const float4 e = {1, 2, 3, 4};  // initializer list
  CHECK(all(e == a));
  const short2 s{short(3), short(-4)};
  CHECK(s.x == 3 && s.y == -4);
  const float4 splat = 2.5f;  // implicit scalar -> vector
  CHECK(all(splat == float4(2.5f)));
  const int4 i = int4(float4(1.9f, -1.9f, 1e10f, -1e10f));  // truncation; out of range saturates
  CHECK(i.x == 1 && i.y == -1 && i.z == INT_MAX && i.w == INT_MIN);
  const int4 n = int4(float4(NAN, 0.5f, -0.5f, 65504.0f));
  CHECK(n.x == 0 && n.y == 0 && n.z == 0 && n.w == 65504);
  const uint2 u = uint2(float2(-3.0f, 4294967296.0f));
  CHECK(u.x == 0 && u.y == UINT_MAX);
  const uchar4 c8 = uchar4(int4(1, 255, 256, -1));  // integer -> integer wraps like C++
  CHECK(c8.x == 1 && c8.y == 255 && c8.z == 0 && c8.w == 255);
  const half4 h = half4(float4(1.0f, 0.1f, 70000.0f, -0.0f));
  CHECK(h.x.mg_bits == 0x3c00 && h.y.mg_bits == 0x2e66 && h.z.mg_bits == 0x7c00 && h.w.mg_bits == 0x8000);
  const float4 back = float4(h);
  CHECK(back.x == 1.0f && back.y == float(half(0.1f)) && std::isinf(back.z));
  const bool4 bl = bool4(int4(0, 1, -2, 0));
  CHECK(!bl.x && bl.y && bl.z && !bl.w);
  const bfloat2 bf = bfloat2(float2(1.0f, 3.0f));
  CHECK(bf.x.mg_bits == 0x3f80 && bf.y.mg_bits == 0x4040);
  const float2 fb = float2(bf);
  CHECK(fb.x == 1.0f && fb.y == 3.0f);
  const half2 hh(1, 2);  // integers convert to half
  CHECK(float(hh.x) == 1.0f && float(hh.y) == 2.0f);
  packed_float3 p = packed_float3(f3);
  CHECK(p.x == 7 && p[1] == 8 && p.z == 9);
  const float3 q = p;
  CHECK(all(q == f3));
  p = float3(1, 2, 3);
  CHECK(p[0] == 1 && p[2] == 3);
  const ulong2 o = 0;  // the simdgroup_load default form
  CHECK(o.x == 0 && o.y == 0);
  constexpr float4 ce(1, 2, 3, 4);
  static_assert(ce[2] == 3, "constexpr vectors");
}

// Swizzles in use (every swizzle of every set is checked by swizzles.cpp).
void test_swizzles() {
  // The examples of the MSL specification, and assignment corner cases.
  float4 pos = float4(1.0f, 2.0f, 3.0f, 4.0f);
  float4 swiz = pos.wzyx;
  CHECK(all(swiz == float4(4, 3, 2, 1)));
  float4 dup = pos.xxyy;
  CHECK(all(dup == float4(1, 1, 2, 2)));
  pos.xw = float2(5.0f, 6.0f);
  CHECK(all(pos == float4(5, 2, 3, 6)));
  pos.wx = float2(7.0f, 8.0f);
  CHECK(all(pos == float4(8, 2, 3, 7)));
  pos.xyz = float3(3.0f, 5.0f, 9.0f);
  CHECK(all(pos == float4(3, 5, 9, 7)));
  float4 w = float4(10, 20, 30, 40);
  pos.xy = w.xy;  // same proxy type: must write two components, not copy the vector
  CHECK(all(pos == float4(10, 20, 9, 7)));
  pos.xy = pos.yx;  // aliasing
  CHECK(all(pos == float4(20, 10, 9, 7)));
  const float4 cw = w;
  pos.zw = cw.zw;
  CHECK(all(pos == float4(20, 10, 30, 40)));
  pos.xy = 0.5f;  // scalar broadcast
  CHECK(all(pos == float4(0.5f, 0.5f, 30, 40)));
  pos.zw += 1.0f;
  pos.xy *= float2(4, 2);
  CHECK(all(pos == float4(2, 1, 31, 41)));
  pos.rgb = pos.bgr;
  CHECK(all(pos == float4(31, 1, 2, 41)));
  auto sw = pos.xz;  // a copy of the proxy still reads the right components
  const float2 from_copy = sw;
  CHECK(all(from_copy == float2(31, 2)));
  CHECK(length(pos.xy) == std::sqrt(31.0f * 31.0f + 1.0f));
  CHECK(dot(pos.xyz, float3(1)) == 34.0f);
  CHECK(all(max(pos.xy, 2.0f) == float2(31, 2)));
  uint3 tid(7, 8, 9);
  CHECK(tid.x * 100 + tid.y == 708u);
  uint2 t2 = tid.xy;
  CHECK(t2.y == 8u);
}

// --- element-wise operators against scalar loops ---
template <class V, class Gen>
void test_int_ops(Gen &rng) {
  using T = mgsim::lang::velem_t<V>;
  constexpr int N = mgsim::lang::vsize_v<V>;
  for (int iter = 0; iter < 2000; ++iter) {
    V a, b;
    for (int i = 0; i < N; ++i) {
      a[i] = T(rng());
      b[i] = T(rng());
      if (b[i] == 0) b[i] = 1;
    }
    const T s = T(rng() | 1u);
    const int sh = int(rng() % 80);
    const V add = a + b, sub = a - b, mul = a * b, div = a / b, mod = a % b, band = a & b, bor = a | b,
            bxor = a ^ b, shl = a << sh, shr = a >> b, adds = a + s, muls = s * a, neg = -a, inv = ~a;
    const auto lt = a < b, eq = a == a, ge = a >= s;
    bool ok = true;
    for (int i = 0; i < N; ++i) {
      const int bits = int(sizeof(T) * 8);
      using U = std::make_unsigned_t<T>;
      using W = std::conditional_t<(sizeof(T) < 4), uint, U>;  // wrapping arithmetic, no promotion to int
      ok = ok && add[i] == T(W(a[i]) + W(b[i])) && sub[i] == T(W(a[i]) - W(b[i])) && mul[i] == T(W(a[i]) * W(b[i]));
      ok = ok && div[i] == T(a[i] / b[i]) && mod[i] == T(a[i] % b[i]);
      ok = ok && band[i] == T(a[i] & b[i]) && bor[i] == T(a[i] | b[i]) && bxor[i] == T(a[i] ^ b[i]);
      ok = ok && shl[i] == T(U(a[i]) << (sh % bits)) && shr[i] == T(a[i] >> int(U(b[i]) % U(bits)));
      ok = ok && adds[i] == T(W(a[i]) + W(s)) && muls[i] == T(W(s) * W(a[i])) && neg[i] == T(W(0) - W(a[i])) && inv[i] == T(~a[i]);
      ok = ok && lt[i] == (a[i] < b[i]) && eq[i] && ge[i] == (a[i] >= s);
    }
    CHECK_F(ok, "integer vector operators, iteration %d", iter);
    V c = a;
    c += b;
    c -= s;
    c *= 3;
    c <<= 1;
    c ^= b;
    c |= 1;
    c &= T(~0);
    c %= b;
    bool ok2 = true;
    for (int i = 0; i < N; ++i) {
      using U = std::make_unsigned_t<T>;
      using W = std::conditional_t<(sizeof(T) < 4), uint, U>;
      T x = T(W(a[i]) + W(b[i]));
      x = T(W(x) - W(s));
      x = T(W(x) * 3u);
      x = T(U(x) << 1);
      x = T(x ^ b[i]);
      x = T(x | 1);
      x = T(x % b[i]);
      ok2 = ok2 && c[i] == x;
    }
    CHECK_F(ok2, "integer compound assignment, iteration %d", iter);
  }
}

void test_float_ops() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (int iter = 0; iter < 2000; ++iter) {
    float4 a, b;
    half4 ha, hb;
    for (int i = 0; i < 4; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
      ha[i] = half(dist(rng));
      hb[i] = half(dist(rng));
    }
    const float4 r = (a + b) * a / b - 2.0f;
    const half4 hr = ha * hb + ha / hb - 1;
    const bool4 le = a <= b;
    bool ok = true;
    for (int i = 0; i < 4; ++i) {
      ok = ok && r[i] == (a[i] + b[i]) * a[i] / b[i] - 2.0f && le[i] == (a[i] <= b[i]);
      // half: every operation rounds to half
      const half p = half(float(ha[i]) * float(hb[i])), q = half(float(ha[i]) / float(hb[i]));
      const half sum = half(float(p) + float(q)), res = half(float(sum) - 1.0f);
      ok = ok && hr[i].mg_bits == res.mg_bits;
    }
    CHECK_F(ok, "float/half vector operators, iteration %d", iter);
  }
  float4 v(1, 2, 3, 4);
  ++v;
  v++;
  --v;
  CHECK(all(v == float4(2, 3, 4, 5)));
  const float4 old = v--;
  CHECK(all(old == float4(2, 3, 4, 5)) && all(v == float4(1, 2, 3, 4)));
  v[2] = 10;
  CHECK(v.z == 10 && v[2] == 10);
  const int4 k(1, 2, 3, 4);
  CHECK(k[3] == 4);
  CHECK(all((int4(1) << 33) == int4(2)));  // counts use their low 5 bits
  CHECK(all((int4(-8) >> 1) == int4(-4)));  // arithmetic right shift
  CHECK(all((!bool2(true, false)) == bool2(false, true)));
  CHECK(all((bool2(true, false) || bool2(false, false)) == bool2(true, false)));
  CHECK(any(float3(1, 2, 3) > 2.5f) && !all(float3(1, 2, 3) > 2.5f));
}

// --- scalar half/bfloat arithmetic rules ---
void test_scalar_rules() {
  half h = 1.5f;
  h += 1;  // h = half(h + 1)
  CHECK(float(h) == 2.5f);
  h *= 2.0f;
  CHECK(float(h) == 5.0f);
  h /= half(2);
  CHECK(float(h) == 2.5f);
  h -= 0.5;
  CHECK(float(h) == 2.0f);
  ++h;
  h++;
  CHECK(float(h) == 4.0f);
  CHECK(float(h--) == 4.0f && float(h) == 3.0f);
  const half big = 60000.0f;
  CHECK(std::isinf(float(big + big)));      // half + half overflows in half
  CHECK(float(big + 10000.0f) == 70000.0f);  // half + float computes in float
  CHECK(float(half(1) + 1e-4f) == 1.0001f);
  CHECK((half(1) + half(1e-4f)).mg_bits == 0x3c00);  // 1 + 1e-4 rounds back to 1 in half
  CHECK(half(2049) == 2048);                          // int converts to half before comparing
  int i = half(3.75f);  // implicit half -> int truncates
  CHECK(i == 3);
  float f = half(0.5f);
  CHECK(f == 0.5f);
  bfloat b = bfloat(1.0f);
  b += 1;
  CHECK(float(b) == 2.0f);
  CHECK(float(b * 3) == 6.0f);
  CHECK(float(bfloat(257)) == 256.0f);  // 8 significant bits
  CHECK(float(bfloat(1.0f) + bfloat(0.00390625f)) == 1.0f);  // tie to even
  CHECK(float(-bfloat(2.0f)) == -2.0f);
  const half nz = -half(0.0f);
  CHECK(nz.mg_bits == 0x8000);
  const half nan = half(NAN);
  CHECK(!(nan == nan) && (nan != nan));
  if (h) CHECK(true);  // contextual conversion to bool
  CHECK(half(1) < 2 && 2.5f > half(2) && half(3) >= half(3));
}

// --- as_type ---
void test_as_type() {
  CHECK(as_type<uint>(1.0f) == 0x3f800000u);
  CHECK(as_type<float>(0x40490fdbu) == 3.14159274101257324f);
  CHECK(as_type<ushort>(half(1.0f)) == 0x3c00);
  CHECK(float(as_type<bfloat>(ushort(0x3f80))) == 1.0f);
  CHECK(float(as_type<half>(short(0x7bff))) == 65504.0f);
  const half2 h2 = as_type<half2>(0x40003c00u);  // little-endian: x is the low half
  CHECK(float(h2.x) == 1.0f && float(h2.y) == 2.0f);
  CHECK(as_type<uint>(h2) == 0x40003c00u);
  const uint2 u2 = as_type<uint2>(float2(1.0f, -2.0f));
  CHECK(u2.x == 0x3f800000u && u2.y == 0xc0000000u);
  const float4 f4 = as_type<float4>(int4(0x3f800000, 0, int(0x80000000u), 0x7f800000));
  CHECK(f4.x == 1.0f && f4.y == 0.0f && std::signbit(f4.z) && std::isinf(f4.w));
  CHECK(as_type<ulong>(uint2(1, 2)) == 0x0000000200000001ul);
  CHECK(as_type<uchar4>(0x04030201u).z == 3);
  static_assert(as_type<uint>(2.0f) == 0x40000000u, "as_type is constexpr on scalars");
  static_assert(as_type<ushort>(half(-2.0f)) == 0xc000, "constexpr half");
}

// --- numeric_limits and type traits ---
void test_limits() {
  using HL = metal::numeric_limits<half>;
  CHECK(float(HL::max()) == 65504.0f && float(HL::lowest()) == -65504.0f);
  CHECK(float(HL::min()) == 0x1p-14f && float(HL::denorm_min()) == 0x1p-24f && float(HL::epsilon()) == 0x1p-10f);
  CHECK(std::isinf(float(HL::infinity())) && std::isnan(float(HL::quiet_NaN())) && std::isnan(float(HL::signaling_NaN())));
  CHECK(HL::signaling_NaN().mg_bits == 0x7d00 && (HL::quiet_NaN().mg_bits & 0x200));
  CHECK(HL::digits == 11 && HL::digits10 == 3 && HL::max_digits10 == 5 && HL::radix == 2 && HL::is_specialized);
  CHECK(HL::min_exponent == -13 && HL::max_exponent == 16 && HL::min_exponent10 == -4 && HL::max_exponent10 == 4);
  CHECK(HL::is_signed && !HL::is_integer && HL::has_infinity && HL::is_iec559 && float(HL::round_error()) == 0.5f);
  using BL = metal::numeric_limits<bfloat>;
  CHECK(float(BL::max()) == 0x1.fep127f && float(BL::lowest()) == -0x1.fep127f && float(BL::min()) == 0x1p-126f);
  CHECK(float(BL::denorm_min()) == 0x1p-133f && float(BL::epsilon()) == 0x1p-7f && std::isinf(float(BL::infinity())));
  CHECK(BL::digits == 8 && BL::digits10 == 2 && BL::max_digits10 == 4 && BL::max_exponent == 128 && BL::min_exponent == -125);
  CHECK(std::isnan(float(BL::quiet_NaN())) && std::isnan(float(BL::signaling_NaN())));
  // epsilon is the gap above 1; max is below inf; digits10 decimal digits survive a round trip.
  CHECK(float(half(1.0f + float(HL::epsilon()))) > 1.0f && float(half(1.0f + float(HL::epsilon()) / 2)) == 1.0f);
  CHECK(float(bfloat(1.0f + float(BL::epsilon()))) > 1.0f && float(bfloat(1.0f + float(BL::epsilon()) / 2)) == 1.0f);
  CHECK(metal::numeric_limits<float>::max() == FLT_MAX && metal::numeric_limits<int>::min() == INT_MIN);
  CHECK(metal::numeric_limits<uint>::max() == UINT_MAX && metal::numeric_limits<const half>::max().mg_bits == 0x7bff);
  constexpr half neg_inf = -metal::numeric_limits<half>::infinity();  // as MLX's Limits<half> uses it
  static_assert(neg_inf.mg_bits == 0xfc00, "constexpr limits");
  constexpr bfloat bmax = metal::numeric_limits<bfloat>::max();
  static_assert(bmax.mg_bits == 0x7f7f, "constexpr limits");
}
static_assert(metal::is_floating_point_v<half> && metal::is_floating_point_v<bfloat> && metal::is_floating_point_v<float> &&
                  !metal::is_floating_point_v<int>, "is_floating_point");
static_assert(metal::is_arithmetic_v<half> && metal::is_signed_v<bfloat> && metal::is_signed_v<int> && !metal::is_signed_v<uint>, "traits");
static_assert(metal::is_vector_v<float4> && metal::is_vector_v<packed_float3> && !metal::is_vector_v<float>, "is_vector");
static_assert(metal::is_integral_v<short> && metal::is_same_v<metal::remove_addrspace_t<const int>, const int>, "std traits");
static_assert(metal::is_convertible_v<bfloat, float> && metal::is_same_v<metal::make_unsigned_t<int>, uint>, "std traits");
static_assert(std::is_same<metal::conditional_t<true, half, float>, half>::value && metal::bool_constant<true>::value, "std traits");

void test_library_types() {
  metal::array<float, 3> arr = {1.0f, 2.0f, 3.0f};
  CHECK(arr.size() == 3 && arr[1] == 2.0f && *(arr.end() - 1) == 3.0f && !arr.empty());
  arr[0] = 5;
  CHECK(arr.front() == 5 && arr.data()[0] == 5);
  const uniform<int> stride = make_uniform(8);
  const uniform<int> n = make_uniform(100);
  const uniform<int> iters = n / stride;  // arithmetic through the underlying type
  int total = 0;
  for (int i = 0; i < iters; ++i) total += stride;
  CHECK(int(iters) == 12 && total == 96);
  constexpr uniform<int> cu = make_uniform(3);
  static_assert(cu == 3, "constexpr uniform");
}

}  // namespace

int main() {
  test_constructors();
  test_swizzles();
  std::mt19937 rng(42);
  test_int_ops<int4>(rng);
  test_int_ops<uint3>(rng);
  test_int_ops<short2>(rng);
  test_int_ops<ushort4>(rng);
  test_int_ops<char4>(rng);
  test_int_ops<uchar2>(rng);
  test_int_ops<long3>(rng);
  test_int_ops<ulong2>(rng);
  test_float_ops();
  test_scalar_rules();
  test_as_type();
  test_limits();
  test_library_types();
  return check::finish("vector_types");
}
