// Convolution (MLX's primitive, channels last: x (N, L…, Cin), w (Cout, K…, Cig), 1–3 spatial axes,
// strides, padding (negative crops), kernel and input dilation, groups, flip) as an implicit GEMM per
// group on the packed GEMM's micro-kernels:
//
//   out[(n, o), g·Cog + c] = Σ_(tap, ci) X[(n, o), (tap, ci)] · W_g[(tap, ci), c]
//
// X is never materialised: the GEMM's A panels are packed straight from x through the index map
// (padding and dilation holes read as 0). W_g is rearranged once per call into (tap, ci) × Cog
// (the flip applied, 16-bit floats widened). Its backward passes are Convolution nodes too (the
// rules in ts/core/rules/convolution.ts), so they run here as well.
//
// Each output element sums its taps·Cig products in order within KC blocks (float32 accumulators
// for 16- and 32-bit floats, float64 for float64): the split of positions and channels over threads
// never changes a bit. Depthwise convolutions (one input and one output channel per group) run a
// direct loop vectorised over channels instead, whose per-element order is the same fixed one.
//
// The reference (ts/backend/cpu/convolution.ts) skips taps that read padding; a GEMM multiplies
// them by zero instead, which differs only when a weight is infinite or NaN: such calls are declined
// (the reference runs).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

namespace {

constexpr int64_t KC = 256;
constexpr int64_t MC = 144;
constexpr int64_t NC = 512;

struct Conv {
  int nd, dtype;
  int64_t N, L[3], Cin, Cout, K[3], Cig, O[3];
  const char *x, *w;
  char *out;
  int64_t xs[5], ws[5];  // strides: batch / out channel, spatial…, channel
  int64_t stride[3], lo[3], kd[3], id[3];
  int64_t G, Cog, taps, opos, kdim, M;
  bool flip;
  std::vector<int64_t> tapk;  // per tap: kernel coordinates (nd each)
  // without input dilation: per tap, the offset from the row's origin; the kernel's reach per axis
  bool dense;
  std::vector<int64_t> tapdelta;
  int64_t reach[3];
};

template <class T> T load_as(const char *p, int dtype, int64_t i) {
  switch (dtype) {
    case F32: return T(reinterpret_cast<const float *>(p)[i]);
    case F64: return T(reinterpret_cast<const double *>(p)[i]);
    case F16: return T(f16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
    default: return T(bf16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
  }
}

template <class T> void store_as(char *p, int dtype, int64_t i, T v) {
  switch (dtype) {
    case F32: reinterpret_cast<float *>(p)[i] = float(v); break;
    case F64: reinterpret_cast<double *>(p)[i] = double(v); break;
    case F16: reinterpret_cast<uint16_t *>(p)[i] = f32_to_f16(float(v)); break;
    default: reinterpret_cast<uint16_t *>(p)[i] = f32_to_bf16(float(v)); break;
  }
}

// W rearranged: [g][tap·Cig + ci][c] = w[g·Cog + c, tap (flipped when asked), ci]. False when a
// weight is not finite (the reference's skipped padding taps would then differ).
template <class T> bool rearrange_weights(const Conv &c, T *wm) {
  bool finite = true;
  for (int64_t g = 0; g < c.G; g++)
    for (int64_t t = 0; t < c.taps; t++) {
      int64_t off = 0;
      for (int a = 0; a < c.nd; a++) {
        const int64_t k = c.tapk[size_t(t * c.nd + a)];
        off += (c.flip ? c.K[a] - 1 - k : k) * c.ws[1 + a];
      }
      for (int64_t ci = 0; ci < c.Cig; ci++) {
        T *row = wm + (g * c.kdim + t * c.Cig + ci) * c.Cog;
        const int64_t base = off + ci * c.ws[c.nd + 1] + g * c.Cog * c.ws[0];
        if (c.dtype == F32 && sizeof(T) == 4) {
          // float32 (a weight gradient's cotangent is this big): no dtype switch, and the
          // finiteness test on the bits, both vectorisable
          const float *src = reinterpret_cast<const float *>(c.w) + base;
          const int64_t st = c.ws[0];
          uint32_t all = 0;
          for (int64_t oc = 0; oc < c.Cog; oc++) {
            const float v = src[oc * st];
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            all |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
            row[oc] = T(v);
          }
          finite &= all == 0;
          continue;
        }
        for (int64_t oc = 0; oc < c.Cog; oc++) {
          const T v = load_as<T>(c.w, c.dtype, base + oc * c.ws[0]);
          finite &= std::isfinite(v);
          row[oc] = v;
        }
      }
    }
  return finite;
}

// The input offset tap t of output row m reads, or -1 for padding and dilation holes.
inline int64_t tap_offset(const Conv &c, const int64_t *origin, int64_t base, int64_t t) {
  int64_t off = base;
  for (int a = 0; a < c.nd; a++) {
    int64_t j = origin[a] + c.tapk[size_t(t * c.nd + a)] * c.kd[a];
    if (j < 0) return -1;
    if (c.id[a] != 1) {
      if (j % c.id[a] != 0) return -1;
      j /= c.id[a];
    }
    if (j >= c.L[a]) return -1;
    off += j * c.xs[1 + a];
  }
  return off;
}

// Row m's batch offset and per-axis origin (o·stride − lo).
inline int64_t row_origin(const Conv &c, int64_t m, int64_t *origin) {
  int64_t n = m / c.opos, o = m % c.opos;
  for (int a = c.nd - 1; a >= 0; a--) {
    origin[a] = (o % c.O[a]) * c.stride[a] - c.lo[a];
    o /= c.O[a];
  }
  return n * c.xs[0];
}

// A panels of rows [m0, m0 + mc) and columns [k0, k0 + kc) of X (group g), packed as the
// micro-kernel reads them: panel of mr rows, element (p, i) at p·mr + i.
template <class T>
void pack_a(const Conv &c, int64_t g, int64_t m0, int64_t mc, int64_t k0, int64_t kc, int mr, T *dst) {
  const int64_t cs = c.xs[c.nd + 1];
  const int64_t t0 = k0 / c.Cig, t1 = (k0 + kc - 1) / c.Cig;
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    T *d = dst + i0 * kc;
    for (int64_t i = 0; i < mr; i++) {
      const int64_t m = m0 + i0 + i;
      if (i0 + i >= mc) {
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = T(0);
        continue;
      }
      int64_t origin[3];
      const int64_t base = row_origin(c, m, origin) + g * c.Cig * cs;
      bool interior = c.dense;
      int64_t rowoff = base;
      for (int a = 0; a < c.nd && interior; a++) {
        interior = origin[a] >= 0 && origin[a] + c.reach[a] < c.L[a];
        rowoff += origin[a] * c.xs[1 + a];
      }
      if (interior && c.dtype == F32 && sizeof(T) == 4) {
        // every tap reads the input: no bounds, offsets from a table
        const float *xp = reinterpret_cast<const float *>(c.x) + rowoff;
        if (c.Cig == 1) {
          for (int64_t t = t0; t <= t1; t++) d[(t - k0) * mr + i] = T(xp[c.tapdelta[size_t(t)]]);
        } else {
          for (int64_t t = t0; t <= t1; t++) {
            const int64_t ci0 = std::max<int64_t>(0, k0 - t * c.Cig), ci1 = std::min<int64_t>(c.Cig, k0 + kc - t * c.Cig);
            T *dp = d + (t * c.Cig + ci0 - k0) * mr + i;
            const float *sp = xp + c.tapdelta[size_t(t)];
            for (int64_t ci = ci0; ci < ci1; ci++, dp += mr) *dp = T(sp[ci * cs]);
          }
        }
        continue;
      }
      for (int64_t t = t0; t <= t1; t++) {
        const int64_t ci0 = std::max<int64_t>(0, k0 - t * c.Cig), ci1 = std::min<int64_t>(c.Cig, k0 + kc - t * c.Cig);
        T *dp = d + (t * c.Cig + ci0 - k0) * mr + i;
        const int64_t off = tap_offset(c, origin, base, t);
        if (off < 0) {
          for (int64_t ci = ci0; ci < ci1; ci++, dp += mr) *dp = T(0);
        } else if (c.dtype == F32 && sizeof(T) == 4) {
          const float *s = reinterpret_cast<const float *>(c.x) + off;
          for (int64_t ci = ci0; ci < ci1; ci++, dp += mr) *dp = T(s[ci * cs]);
        } else if (c.dtype == F64 && sizeof(T) == 8) {
          const double *s = reinterpret_cast<const double *>(c.x) + off;
          for (int64_t ci = ci0; ci < ci1; ci++, dp += mr) *dp = T(s[ci * cs]);
        } else {
          for (int64_t ci = ci0; ci < ci1; ci++, dp += mr) *dp = load_as<T>(c.x, c.dtype, off + ci * cs);
        }
      }
    }
  }
}

template <class T>
void pack_b(const T *b, int64_t ld, int64_t kc, int64_t nc, int nr, T *dst) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    T *d = dst + j0 * kc;
    const int64_t cols = std::min<int64_t>(nr, nc - j0);
    for (int64_t p = 0; p < kc; p++) {
      const T *s = b + p * ld + j0;
      T *dp = d + p * nr;
      for (int64_t j = 0; j < cols; j++) dp[j] = s[j];
      for (int64_t j = cols; j < nr; j++) dp[j] = T(0);
    }
  }
}

struct Job {
  const Conv *c;
  const Isa *isa;
  const void *wm;
  int mr, nr;
  int64_t mt, nt, mtasks, ntasks;
  size_t scratch_bytes;
  bool direct;  // the output dtype is the accumulator's: micro-kernels write it in place
  std::atomic<bool> failed{false};
};

template <class T> size_t scratch_for(const Job &j) {
  const int64_t nc_max = std::min<int64_t>(NC, (j.nt + j.nr - 1) / j.nr * j.nr);
  const int64_t mc_max = (std::min<int64_t>(MC, j.mt) + j.mr - 1) / j.mr * j.mr;
  size_t doubles = size_t(KC * nc_max + KC * mc_max + j.mr * j.nr);
  if (!j.direct) doubles += size_t(j.mt * j.nt);
  return doubles * sizeof(T) + 256;
}

// One task: rows [m0, m0 + mt) and channels [n0, n0 + nt) of group g.
template <class T> void conv_task(void *ctx, int64_t task, int thread) {
  Job &j = *static_cast<Job *>(ctx);
  const Conv &c = *j.c;
  const Isa &is = *j.isa;
  const int mr = j.mr, nr = j.nr;
  const int64_t per_group = j.mtasks * j.ntasks;
  const int64_t g = task / per_group, t = task % per_group;
  const int64_t m0 = (t / j.ntasks) * j.mt, n0 = (t % j.ntasks) * j.nt;
  const int64_t m = std::min(j.mt, c.M - m0), n = std::min(j.nt, c.Cog - n0);
  char *scratch = static_cast<char *>(thread_scratch(thread, j.scratch_bytes));
  if (!scratch) {
    j.failed.store(true, std::memory_order_relaxed);
    return;
  }
  const int64_t nc_max = std::min<int64_t>(NC, (j.nt + nr - 1) / nr * nr);
  const int64_t mc_max = (std::min<int64_t>(MC, j.mt) + mr - 1) / mr * mr;
  T *bp = reinterpret_cast<T *>(scratch);
  T *ap = bp + KC * nc_max;
  T *edge = ap + KC * mc_max;
  T *acc = edge + mr * nr;
  // C: the output itself (ldc Cout) or the task's accumulator tile (ldc n)
  T *cbase;
  int64_t ldc;
  if (j.direct) {
    cbase = reinterpret_cast<T *>(c.out) + m0 * c.Cout + g * c.Cog + n0;
    ldc = c.Cout;
  } else {
    cbase = acc;
    ldc = n;
  }
  const T *wg = static_cast<const T *>(j.wm) + g * c.kdim * c.Cog;
  if (c.kdim == 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t q = 0; q < n; q++) cbase[i * ldc + q] = T(0);
  }
  for (int64_t jc = 0; jc < n; jc += NC) {
    const int64_t nc = std::min(NC, n - jc);
    for (int64_t pc = 0; pc < c.kdim; pc += KC) {
      const int64_t kc = std::min(KC, c.kdim - pc);
      pack_b(wg + pc * c.Cog + n0 + jc, c.Cog, kc, nc, nr, bp);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = std::min(MC, m - ic);
        pack_a(c, g, m0 + ic, mc, pc, kc, mr, ap);
        micro_tiles<T>(is, kc, ap, bp, mc, nc, mr, nr, cbase + ic * ldc + jc, ldc, pc > 0, edge);
      }
    }
  }
  if (!j.direct)
    for (int64_t i = 0; i < m; i++)
      for (int64_t q = 0; q < n; q++) store_as<T>(c.out, c.dtype, (m0 + i) * c.Cout + g * c.Cog + n0 + q, acc[i * n + q]);
}

// Depthwise (Cig = Cog = 1): out[n, o, g] = Σ_tap x[n, pos(o, tap), g]·w[g, tap], channels
// innermost and contiguous in the output; taps in order, accumulated in T.
template <class T> void depthwise_task(void *ctx, int64_t task, int) {
  Job &j = *static_cast<Job *>(ctx);
  const Conv &c = *j.c;
  const T *wm = static_cast<const T *>(j.wm);  // [g][tap] (Cig = Cog = 1)
  const int64_t rows_per_task = j.mt;
  const int64_t r0 = task * rows_per_task, r1 = std::min(c.M, r0 + rows_per_task);
  const int64_t cs = c.xs[c.nd + 1];
  std::vector<T> acc(size_t(c.G));
  for (int64_t m = r0; m < r1; m++) {
    int64_t origin[3];
    const int64_t base = row_origin(c, m, origin);
    std::fill(acc.begin(), acc.end(), T(0));
    for (int64_t t = 0; t < c.taps; t++) {
      const int64_t off = tap_offset(c, origin, base, t);
      if (off < 0) continue;
      if (c.dtype == F32 && sizeof(T) == 4) {
        const float *s = reinterpret_cast<const float *>(c.x) + off;
        for (int64_t g = 0; g < c.G; g++) acc[size_t(g)] += T(s[g * cs]) * wm[g * c.taps + t];
      } else {
        for (int64_t g = 0; g < c.G; g++) acc[size_t(g)] += load_as<T>(c.x, c.dtype, off + g * cs) * wm[g * c.taps + t];
      }
    }
    for (int64_t g = 0; g < c.G; g++) store_as<T>(c.out, c.dtype, m * c.Cout + g, acc[size_t(g)]);
  }
}

template <class T> int run(Conv &c, const char *fn) {
  const Isa &is = isa();
  std::unique_ptr<T[]> wm(new (std::nothrow) T[size_t(std::max<int64_t>(1, c.G * c.kdim * c.Cog))]);
  if (!wm) return fail(fn, "out of memory for the rearranged weights");
  if (!rearrange_weights<T>(c, wm.get())) return unsupported(fn, "a weight is infinite or NaN");
  Job j;
  j.c = &c;
  j.isa = &is;
  j.wm = wm.get();
  const double flops = 2.0 * double(c.M) * double(c.Cout) * double(std::max<int64_t>(c.kdim, 1));
  if (c.Cig == 1 && c.Cog == 1 && c.G > 1) {
    // depthwise: rows of output positions, all channels each
    j.mt = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, c.G * c.taps));
    const int64_t tasks = (c.M + j.mt - 1) / j.mt;
    const int threads = threads_for(flops / 4);
    note_threads(threads);
    parallel_for(tasks, threads, depthwise_task<T>, &j);
    return MGCPU_OK;
  }
  const bool f64 = sizeof(T) == 8;
  j.mr = f64 ? is.gemm_mr_f64 : is.gemm_mr_f32;
  j.nr = f64 ? is.gemm_nr_f64 : is.gemm_nr_f32;
  j.direct = c.dtype == (f64 ? F64 : F32);
  const int threads = threads_for(flops / 40 + double(c.M) * double(c.kdim) * double(c.G) / 2);
  // tasks: row blocks of about MC (balanced), channel blocks of at most NC; split rows further
  // while there are fewer than 3 tasks per thread
  const int64_t row_blocks = (c.M + MC - 1) / MC;
  j.mt = ((c.M + row_blocks - 1) / row_blocks + j.mr - 1) / j.mr * j.mr;
  j.nt = std::min<int64_t>(c.Cog, NC);
  auto count = [&] {
    j.mtasks = (c.M + j.mt - 1) / j.mt;
    j.ntasks = (c.Cog + j.nt - 1) / j.nt;
    return c.G * j.mtasks * j.ntasks;
  };
  while (threads > 1 && count() < 3 * threads && j.mt >= 4 * j.mr) j.mt = ((j.mt + 1) / 2 + j.mr - 1) / j.mr * j.mr;
  const int64_t tasks = count();
  j.scratch_bytes = scratch_for<T>(j);
  note_threads(threads);
  parallel_for(tasks, threads, conv_task<T>, &j);
  if (j.failed.load()) return fail(fn, "out of memory for convolution packing buffers");
  return MGCPU_OK;
}

}  // namespace

// [nd, dtype, N, L…, Cin, x, x strides (nd + 2)…, Cout, K…, Cig, w, w strides (nd + 2)…, O…, out
//  (row-major), stride…, padding low…, kernel dilation…, input dilation…, groups, flip]
int convolution(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_convolution";
  Reader r(desc, words, fn);
  Conv c;
  c.nd = int(r.integer(1, 3, "spatial ndim"));
  c.dtype = r.dtype("dtype");
  const int64_t big = int64_t(1) << 40, bigs = int64_t(1) << 52;
  c.N = r.integer(0, big, "batch");
  for (int a = 0; a < c.nd; a++) c.L[a] = r.integer(0, big, "input length");
  c.Cin = r.integer(0, big, "input channels");
  c.x = r.pointer("x");
  for (int a = 0; a < c.nd + 2; a++) c.xs[a] = r.integer(-bigs, bigs, "x stride");
  c.Cout = r.integer(0, big, "output channels");
  for (int a = 0; a < c.nd; a++) c.K[a] = r.integer(1, big, "kernel length");
  c.Cig = r.integer(0, big, "channels per group");
  c.w = r.pointer("w");
  for (int a = 0; a < c.nd + 2; a++) c.ws[a] = r.integer(-bigs, bigs, "w stride");
  for (int a = 0; a < c.nd; a++) c.O[a] = r.integer(0, big, "output length");
  c.out = r.pointer("output");
  for (int a = 0; a < c.nd; a++) c.stride[a] = r.integer(1, big, "stride");
  for (int a = 0; a < c.nd; a++) c.lo[a] = r.integer(-big, big, "padding");
  for (int a = 0; a < c.nd; a++) c.kd[a] = r.integer(1, big, "kernel dilation");
  for (int a = 0; a < c.nd; a++) c.id[a] = r.integer(1, big, "input dilation");
  c.G = r.integer(1, big, "groups");
  c.flip = r.integer(0, 1, "flip") == 1;
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!is_float(c.dtype)) return unsupported(fn, std::string("convolution of ") + dtype_name(c.dtype));
  if (c.Cin != c.G * c.Cig || c.Cout % c.G != 0) return fail(fn, "channels do not divide into the groups");
  c.Cog = c.Cout / c.G;
  c.taps = 1;
  c.opos = 1;
  for (int a = 0; a < c.nd; a++) c.taps *= c.K[a], c.opos *= c.O[a];
  c.kdim = c.taps * c.Cig;
  c.M = c.N * c.opos;
  if (c.M == 0 || c.Cout == 0) return MGCPU_OK;
  int64_t in_size = c.N * c.Cin;
  for (int a = 0; a < c.nd; a++) in_size *= c.L[a];
  if (!c.out || (in_size > 0 && !c.x) || (c.Cout * c.kdim > 0 && !c.w)) return fail(fn, "null operand");
  c.tapk.resize(size_t(c.taps * c.nd));
  c.tapdelta.resize(size_t(c.taps));
  c.dense = true;
  for (int a = 0; a < c.nd; a++) {
    c.dense &= c.id[a] == 1;
    c.reach[a] = (c.K[a] - 1) * c.kd[a];
  }
  for (int64_t t = 0; t < c.taps; t++) {
    int64_t rest = t, delta = 0;
    for (int a = c.nd - 1; a >= 0; a--) {
      const int64_t k = rest % c.K[a];
      c.tapk[size_t(t * c.nd + a)] = k;
      delta += k * c.kd[a] * c.xs[1 + a];
      rest /= c.K[a];
    }
    c.tapdelta[size_t(t)] = delta;
  }
  return c.dtype == F64 ? run<double>(c, fn) : run<float>(c, fn);
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_convolution(const double *desc, int32_t words) { return mgcpu::convolution(desc, words); }
