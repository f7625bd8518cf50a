// The reference guide's kernels (§8.1 myexp, §9.1 strided exp with elem_to_loc, §8.3 rownorm) in
// the form mx.fast.metal_kernel generates them: a template kernel plus a host_name instantiation,
// around the guide's body read from test/fixtures/guide-kernels.
// Expected values are computed here in double precision, independently of the simulator.
#include "harness.h"

// The kernel sources are built when their case runs, not at start-up: run.sh links every harness
// program into one executable, so a static initialiser here would run in all of them.
static std::string myexp_source() {
  return metal_kernel_source(
      "custom_kernel_myexp_float_float_float",
      {"const device float* inp [[buffer(0)]]", "device float* out [[buffer(1)]]",
       "uint3 thread_position_in_grid [[thread_position_in_grid]]"},
      guide_kernel("myexp"));
}

// MLX's utils.h provides elem_to_loc; the project's kernel utilities come later.
static const char *kElemToLoc = R"(
template <typename IdxT>
IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % IdxT(shape[i])) * IdxT(strides[i]);
    elem /= IdxT(shape[i]);
  }
  return loc;
}
)";

static std::string strided_source() {
  return metal_kernel_source(
      "custom_kernel_myexp_strided_float",
      {"const device float* inp [[buffer(0)]]", "const constant int* inp_shape [[buffer(1)]]",
       "const constant int64_t* inp_strides [[buffer(2)]]", "const constant int& inp_ndim [[buffer(3)]]",
       "device float* out [[buffer(4)]]", "uint3 thread_position_in_grid [[thread_position_in_grid]]"},
      guide_kernel("myexp_strided"), kElemToLoc);
}

static std::string rownorm_source() {
  return metal_kernel_source(
      "custom_kernel_rownorm_float",
      {"const device float* x [[buffer(0)]]", "const constant int* x_shape [[buffer(1)]]",
       "const constant int& x_ndim [[buffer(2)]]", "const device float* w [[buffer(3)]]",
       "const device float* eps [[buffer(4)]]", "device float* out [[buffer(5)]]",
       "uint3 thread_position_in_grid [[thread_position_in_grid]]",
       "uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]",
       "uint threads_per_simdgroup [[threads_per_simdgroup]]"},
      guide_kernel("rownorm"));
}

static void test_myexp() {
  Lib lib(myexp_source());
  CHECK(lib.lib, "myexp compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  CHECK(mgsim_library_function_count(lib.lib) == 1 &&
            std::string(mgsim_library_function_name(lib.lib, 0)) == "custom_kernel_myexp_float_float_float",
        "myexp is listed by its host_name");
  auto *f = lib.fn("custom_kernel_myexp_float_float_float");
  const size_t n = 4 * 16 + 37;  // not a multiple of the threadgroup
  std::vector<float> a = randf(n, 7), b(n, -1.0f);
  a[3] = -INFINITY;  // safe math: exp(-inf) == 0
  std::string e = Dispatch(f).buf(0, a).buf(1, b).threads(uint32_t(n), 1, 1, 256, 1, 1).run();
  double worst = 0;
  bool exact_inf = b[3] == 0.0f;
  for (size_t i = 0; i < n; ++i)
    if (i != 3) worst = std::max(worst, std::fabs(double(b[i]) - std::exp(double(a[i]))) / std::exp(double(a[i])));
  CHECK(e.empty() && worst < 2e-7 && exact_inf, "myexp float32 over %zu elements: max rel err %.3g, exp(-inf)=%g %s", n, worst, b[3], e.c_str());
  mgsim_function_release(f);
}

static void test_strided() {
  Lib lib(strided_source());
  CHECK(lib.lib, "strided exp compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("custom_kernel_myexp_strided_float");
  // a = base[::2] of a (8, 16) array: shape (4, 16), strides (32, 1); plus a transposed case.
  std::vector<float> base = randf(8 * 16, 11);
  struct Case { std::vector<int> shape; std::vector<int64_t> strides; const char *what; };
  Case cases[] = {{{4, 16}, {32, 1}, "a[::2] of (8,16)"}, {{16, 8}, {1, 16}, "transpose of (8,16)"},
                  {{3, 5, 7}, {1, 3, 15}, "(3,5,7) reversed-order strides"}};
  for (auto &c : cases) {
    int ndim = int(c.shape.size());
    size_t n = 1;
    for (int s : c.shape) n *= size_t(s);
    std::vector<float> out(n, -1);
    std::string e = Dispatch(f).buf(0, base).buf(1, c.shape).buf(2, c.strides).bytes(3, ndim).buf(4, out)
                        .threads(uint32_t(n), 1, 1, 256, 1, 1).run();
    bool ok = e.empty();
    for (size_t i = 0; i < n && ok; ++i) {
      // independent index math: unravel i in row-major order, dot with strides
      size_t rem = i, loc = 0;
      for (int d = ndim - 1; d >= 0; --d) {
        loc += (rem % size_t(c.shape[d])) * size_t(c.strides[d]);
        rem /= size_t(c.shape[d]);
      }
      double want = std::exp(double(base[loc]));
      ok = std::fabs(out[i] - want) <= 2e-7 * want;
    }
    CHECK(ok, "strided exp with elem_to_loc, %s %s", c.what, e.c_str());
  }
  mgsim_function_release(f);
}

static void test_rownorm() {
  Lib lib(rownorm_source());
  CHECK(lib.lib, "rownorm compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("custom_kernel_rownorm_float");
  struct Case { int rows, D; };
  for (Case c : {Case{2 * 17, 512}, Case{17, 512}, Case{3, 1000}}) {
    std::vector<float> x = randf(size_t(c.rows) * c.D, 3 + c.D), w = randf(size_t(c.D), 5);
    std::vector<float> eps = {1e-5f}, out(x.size(), -7.0f);
    std::vector<int> shape = {c.rows, c.D};
    int ndim = 2;
    std::string e = Dispatch(f).buf(0, x).buf(1, shape).bytes(2, ndim).buf(3, w).buf(4, eps).buf(5, out)
                        .threads(uint32_t(c.rows * 32), 1, 1, 256, 1, 1).run();
    double worst = 0;
    for (int r = 0; r < c.rows; ++r) {
      double ss = 0;
      for (int i = 0; i < c.D; ++i) ss += double(x[size_t(r) * c.D + i]) * x[size_t(r) * c.D + i];
      double scale = 1.0 / std::sqrt(ss / c.D + 1e-5);
      for (int i = 0; i < c.D; ++i) {
        double want = double(x[size_t(r) * c.D + i]) * scale * w[size_t(i)];
        worst = std::max(worst, std::fabs(out[size_t(r) * c.D + i] - want));
      }
    }
    CHECK(e.empty() && worst < 1e-5, "rownorm %dx%d (simd_sum per row): max abs err %.3g %s", c.rows, c.D, worst, e.c_str());
  }
  mgsim_function_release(f);
}

// float16_t comes from the utils.h metal_kernel includes automatically; the typedef stands in.
static std::string myexp_half_source() {
  return metal_kernel_source(
      "custom_kernel_myexp_float_float16_t_float16_t",
      {"const device float16_t* inp [[buffer(0)]]", "device float16_t* out [[buffer(1)]]",
       "uint3 thread_position_in_grid [[thread_position_in_grid]]"},
      guide_kernel("myexp"), "typedef half float16_t;\n");
}

// IEEE binary16 conversions written here, independently of the prelude.
static float half_to_float(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(double(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(double(m | 1024), e - 25);
  return float(s ? -v : v);
}
static uint16_t float_to_half(double f) {  // round to nearest even, finite inputs in range
  uint16_t best = 0;
  double bd = INFINITY;
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    double d = std::fabs(double(half_to_float(uint16_t(b))) - std::fabs(f));
    if (d < bd || (d == bd && (b & 1) == 0)) { bd = d; best = uint16_t(b); }
  }
  return uint16_t(best | (f < 0 ? 0x8000 : 0));
}

static void test_myexp_half() {
  Lib lib(myexp_half_source());
  CHECK(lib.lib, "myexp float16 storage compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("custom_kernel_myexp_float_float16_t_float16_t");
  const size_t n = 4 * 16 + 5;
  std::vector<float> src = randf(n, 9);
  std::vector<uint16_t> a(n), b(n, 0xffff);
  for (size_t i = 0; i < n; ++i) a[i] = float_to_half(src[i] * 3);
  std::string e = Dispatch(f).buf(0, a).buf(1, b).threads(uint32_t(n), 1, 1, 256, 1, 1).run();
  bool ok = e.empty();
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    // float(exp) rounded to half: allow the float exp's last-bit error to flip the rounding.
    double want = std::exp(double(half_to_float(a[i])));
    double got = half_to_float(b[i]);
    if (std::fabs(got - want) > std::ldexp(std::fabs(want), -10)) ++bad;
  }
  CHECK(ok && bad == 0, "myexp float16 storage, float compute: %zu mismatches %s", bad, e.c_str());
  mgsim_function_release(f);
}

int main() {
  test_myexp();
  test_strided();
  test_rownorm();
  test_myexp_half();
  return finish();
}
