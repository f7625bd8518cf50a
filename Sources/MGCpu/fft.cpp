// The FFT primitive (MLX's: complex→complex, real→complex and complex→real over several axes, the
// inverses including 1/n per axis): plans, the order of per-axis steps, and the thread split.
//
// Plans mirror the TypeScript reference (ts/backend/cpu/fft.ts): mixed-radix Stockham (8, 4, 2, then
// odd primes; a direct DFT butterfly for primes ≤ 61), Bluestein beyond, octant-reduced twiddles.
// All arithmetic is float64; complex64/float32 results are rounded once at the end, and several
// axes pass through a float64 work buffer, as the reference's. The per-ISA kernels (fft_impl.h)
// transform FFT_LANES lines at once; threads take groups of lines. A long transform with too few
// lines to fill the lanes is split n = n1·n2 (the four-step FFT: n2 transforms of length n1, a
// twiddle ω_n^(j2·k1), n1 transforms of length n2), whose batches vectorise and thread.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <utility>

#include "MGCpu.h"
#include "fft.h"
#include "mgcpu.h"

namespace mgcpu {

// ---- plans ------------------------------------------------------------------------------------------

void fft_twiddle(int64_t k, int64_t n, int sign, double *re, double *im) {
  k %= n;
  if (k < 0) k += n;
  // units of n/8: the angle within octant `oct` is 2π·rem/(8n)
  const int64_t k8 = 8 * k;
  int64_t oct = k8 / n;
  int64_t rem = k8 - oct * n;
  bool mirrored = false;
  if (oct & 1) {
    rem = n - rem;
    mirrored = true;
  }
  const double a = (2 * M_PI * double(rem)) / (8 * double(n));
  double c = rem == 0 ? 1 : rem == n ? M_SQRT1_2 : std::cos(a);
  double s = rem == 0 ? 0 : rem == n ? M_SQRT1_2 : std::sin(a);
  if (mirrored) std::swap(c, s);
  double rc, rs;
  switch ((oct >> 1) & 3) {
    case 0: rc = c; rs = s; break;
    case 1: rc = -s; rs = c; break;
    case 2: rc = -c; rs = -s; break;
    default: rc = s; rs = -c; break;
  }
  *re = rc;
  *im = sign * rs;
}

namespace {

std::vector<int> factorize(int64_t n) {
  std::vector<int> f;
  while (n % 8 == 0) f.push_back(8), n /= 8;
  while (n % 4 == 0) f.push_back(4), n /= 4;
  while (n % 2 == 0) f.push_back(2), n /= 2;
  for (int64_t p = 3; p * p <= n; p += 2)
    while (n % p == 0) f.push_back(int(p)), n /= p;
  if (n > 1) f.push_back(int(std::min<int64_t>(n, INT32_MAX)));
  return f;
}

std::shared_ptr<FftPlan> stockham_plan(int64_t n, int sign, const std::vector<int> &factors) {
  auto plan = std::make_shared<FftPlan>();
  plan->n = n;
  plan->sign = sign;
  int64_t ns = 1;
  for (int radix : factors) {
    FftPass p;
    p.radix = radix;
    p.ns = ns;
    p.twr.resize(size_t(ns * (radix - 1)));
    p.twi.resize(size_t(ns * (radix - 1)));
    for (int64_t b = 0; b < ns; b++)
      for (int r = 1; r < radix; r++)
        fft_twiddle(r * b, ns * radix, sign, &p.twr[size_t(b * (radix - 1) + r - 1)], &p.twi[size_t(b * (radix - 1) + r - 1)]);
    if (radix != 2 && radix != 3 && radix != 4 && radix != 5 && radix != 7 && radix != 8) {
      p.rootr.resize(size_t(radix));
      p.rooti.resize(size_t(radix));
      for (int k = 0; k < radix; k++) fft_twiddle(k, radix, sign, &p.rootr[size_t(k)], &p.rooti[size_t(k)]);
    }
    plan->passes.push_back(std::move(p));
    ns *= radix;
  }
  return plan;
}

// The forward transform of one interleaved float64 line in place, through the kernels (the chirp's,
// once per plan).
void transform_line(const FftPlan &p, std::vector<double> &line) {
  FftStep st{};
  st.kind = FftC2C;
  st.n = p.n;
  st.plan = &p;
  st.lines = 1;
  st.ndims = 1;
  st.dims[0] = 1;
  st.src = reinterpret_cast<const char *>(line.data());
  st.src_storage = FftC128;
  st.src_stride = 1;
  st.src_len = p.n;
  st.dst = reinterpret_cast<char *>(line.data());
  st.dst_storage = FftC128;
  st.dst_stride = 1;
  st.scale = 1;
  std::vector<double> scratch(size_t(fft_scratch_doubles(st, FFT_LANES)));
  isa().fft_lines(st, 0, 1, scratch.data());
}

std::shared_ptr<FftPlan> bluestein_plan(int64_t n, int sign) {
  auto plan = std::make_shared<FftPlan>();
  plan->n = n;
  plan->sign = sign;
  plan->bluestein = true;
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  plan->m = m;
  plan->chr.resize(size_t(n));
  plan->chi.resize(size_t(n));
  for (int64_t k = 0; k < n; k++) {
    // k² mod 2n keeps the angle small and exact
    const int64_t k2 = int64_t((unsigned __int128)(uint64_t(k)) * uint64_t(k) % uint64_t(2 * n));
    fft_twiddle(k2, 2 * n, sign, &plan->chr[size_t(k)], &plan->chi[size_t(k)]);
  }
  // the conjugate chirp arranged circularly, interleaved, then its forward FFT
  std::vector<double> b(size_t(2 * m), 0.0);
  b[0] = plan->chr[0];
  b[1] = -plan->chi[0];
  for (int64_t k = 1; k < n; k++) {
    b[size_t(2 * k)] = b[size_t(2 * (m - k))] = plan->chr[size_t(k)];
    b[size_t(2 * k + 1)] = b[size_t(2 * (m - k) + 1)] = -plan->chi[size_t(k)];
  }
  plan->fwd = stockham_plan(m, -1, factorize(m));
  plan->inv = stockham_plan(m, 1, factorize(m));
  transform_line(*plan->fwd, b);
  plan->br.resize(size_t(m));
  plan->bi.resize(size_t(m));
  for (int64_t k = 0; k < m; k++) {
    plan->br[size_t(k)] = b[size_t(2 * k)];
    plan->bi[size_t(k)] = b[size_t(2 * k + 1)];
  }
  return plan;
}

std::mutex cache_mutex;
std::map<std::pair<int64_t, int>, std::shared_ptr<const FftPlan>> plan_cache;
std::map<std::pair<int64_t, int>, std::shared_ptr<const std::vector<double>>> root_cache;

// e^(sign·2πik/n) for k in [0, count), split: count real parts, then count imaginary parts. Real
// transforms use count n/2 + 1 with sign −1 (the reference's halfTwiddles); the four-step split
// uses count n.
std::shared_ptr<const std::vector<double>> roots(int64_t n, int sign, int64_t count) {
  const auto key = std::make_pair(n * 2 + (count == n ? 1 : 0), sign);
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto it = root_cache.find(key);
  if (it != root_cache.end()) return it->second;
  auto v = std::make_shared<std::vector<double>>(size_t(2 * count));
  for (int64_t k = 0; k < count; k++) fft_twiddle(k, n, sign, &(*v)[size_t(k)], &(*v)[size_t(count + k)]);
  if (root_cache.size() > 64) root_cache.clear();
  root_cache[key] = v;
  return v;
}

}  // namespace

std::shared_ptr<const FftPlan> fft_plan(int64_t n, int sign) {
  const auto key = std::make_pair(n, sign);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = plan_cache.find(key);
    if (it != plan_cache.end()) return it->second;
  }
  const std::vector<int> f = factorize(n);
  const bool big_prime = std::any_of(f.begin(), f.end(), [](int p) { return p > FFT_MAX_DIRECT_RADIX; });
  std::shared_ptr<const FftPlan> plan = big_prime ? bluestein_plan(n, sign) : stockham_plan(n, sign, f);
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (plan_cache.size() > 256) plan_cache.clear();
  plan_cache[key] = plan;
  return plan;
}

int64_t fft_scratch_doubles(const FftStep &s, int lanes) {
  const FftPlan *p = s.kind == FftC2C || s.n % 2 == 1 || s.n < 4 ? s.plan : s.half;
  const int64_t m = p && p->bluestein ? p->m : 0;
  return (6 * s.n + 16 + 4 * m + 12 * FFT_SKEW) * lanes;
}

// ---- steps --------------------------------------------------------------------------------------------

namespace {

// Work buffers of the calling thread, kept between calls: fresh pages cost a fault each (about
// as much as transforming them), so buffers are reused; those above 64 MiB are released after the
// call. Slots: 0 the work array between axes, 1 the four-step's transposed temporary, 2 and 3 the
// half-length lines of long real transforms.
struct WorkBuffers {
  struct Free {
    void operator()(double *p) const { std::free(p); }
  };
  // 64-byte aligned: the kernels move whole vectors, which must not straddle cache lines
  std::unique_ptr<double, Free> slot[4];
  size_t size[4] = {0, 0, 0, 0};
  double *get(int i, size_t doubles) {
    if (size[i] < doubles) {
      slot[i].reset(nullptr);
      slot[i].reset(static_cast<double *>(std::aligned_alloc(64, (doubles * sizeof(double) + 63) & ~size_t(63))));
      size[i] = slot[i] ? doubles : 0;
    }
    return slot[i].get();
  }
  void trim() {
    for (int i = 0; i < 4; i++)
      if (size[i] * sizeof(double) > (size_t(64) << 20)) slot[i].reset(), size[i] = 0;
  }
};
thread_local WorkBuffers work_buffers;

int storage_size(int storage) { return storage == FftF32 || storage == FftF32Pair ? 4 : storage == FftC64 ? 8 : 16; }

struct StepJob {
  const FftStep *step;
  const Isa *isa;
  size_t scratch_bytes;
  std::atomic<bool> failed{false};
};

void step_task(void *ctx, int64_t task, int thread) {
  StepJob &job = *static_cast<StepJob *>(ctx);
  const int64_t first = task * FFT_LANES;
  const int64_t count = std::min<int64_t>(FFT_LANES, job.step->lines - first);
  auto *scratch = static_cast<double *>(thread_scratch(thread, job.scratch_bytes));
  if (!scratch) {
    job.failed.store(true, std::memory_order_relaxed);
    return;
  }
  job.isa->fft_lines(*job.step, first, count, scratch);
}

double log2n(int64_t n) { return std::log2(double(std::max<int64_t>(n, 2))); }

// Runs every line of a step on the pool (its plans attached). False when scratch ran out.
bool run_lines(const FftStep &s) {
  if (s.lines == 0) return true;
  StepJob job;
  job.step = &s;
  job.isa = &isa();
  job.scratch_bytes = size_t(fft_scratch_doubles(s, FFT_LANES)) * sizeof(double);
  const int64_t tasks = (s.lines + FFT_LANES - 1) / FFT_LANES;
  // ~0.3 ns per element and pass, vectorised over the lanes
  const int threads = threads_for(0.3 * double(s.lines) * double(s.n) * (log2n(s.n) + 2));
  note_threads(threads);
  parallel_for(tasks, threads, step_task, &job);
  return !job.failed.load(std::memory_order_relaxed);
}

// Plans (and twiddle tables) a step needs, kept alive while it runs.
struct StepPlans {
  std::shared_ptr<const FftPlan> plan, half;
  std::shared_ptr<const std::vector<double>> half_tw, tw;
};

void attach_plans(FftStep &s, StepPlans &keep, int sign) {
  s.plan = s.half = nullptr;
  s.half_twr = s.half_twi = nullptr;
  if (s.kind == FftC2C || s.n % 2 == 1 || s.n < 4) {
    keep.plan = fft_plan(s.n, s.kind == FftC2C ? sign : s.kind == FftR2C ? -1 : 1);
    s.plan = keep.plan.get();
  } else {
    const int64_t c = s.n / 2 + 1;
    keep.half = fft_plan(s.n / 2, s.kind == FftR2C ? -1 : 1);
    s.half = keep.half.get();
    keep.half_tw = roots(s.n, -1, c);
    s.half_twr = keep.half_tw->data();
    s.half_twi = keep.half_tw->data() + c;
  }
}

// A line step over one strided run: `lines` lines of length n, line i at i·line_step (src) and
// i·dst_line_step (dst) elements.
FftStep line_step(int kind, int64_t n, int64_t lines, const char *src, int src_storage, int64_t src_line_step, int64_t src_stride,
                  int64_t src_len, char *dst, int dst_storage, int64_t dst_line_step, int64_t dst_stride) {
  FftStep s{};
  s.kind = kind;
  s.n = n;
  s.lines = lines;
  s.ndims = 1;
  s.dims[0] = std::max<int64_t>(lines, 1);
  s.sdims[0] = src_line_step;
  s.ddims[0] = dst_line_step;
  s.src = src;
  s.src_storage = src_storage;
  s.src_stride = src_stride;
  s.src_len = src_len;
  s.dst = dst;
  s.dst_storage = dst_storage;
  s.dst_stride = dst_stride;
  s.scale = 1;
  return s;
}

// The split n = n1·n2 of a long line (n1 the largest divisor ≤ √n), or 0 when n has none ≥ 16.
int64_t four_step_split(int64_t n) {
  if (n < 1024) return 0;
  int64_t best = 0;
  for (int64_t d = 16; d * d <= n; d++)
    if (n % d == 0) best = d;
  return best;
}

// One complex line of length n by the four-step split (src: pair at `src_pair` floats for
// FftF32Pair), into dst (scaled).
bool four_step(int64_t n, int64_t n1, int sign, const char *src, int src_storage, int64_t src_stride, int64_t src_pair,
               char *dst, int dst_storage, int64_t dst_stride, double scale) {
  const int64_t n2 = n / n1;
  // T's rows are padded by 4 elements: a pitch of a multiple of 4 KiB would map every element a
  // line writes (or reads) to the same cache set
  const int64_t pitch = n2 + 4;
  double *temp = work_buffers.get(1, size_t(2 * n1 * pitch));
  if (!temp) return false;
  auto tw = roots(n, sign, n);
  StepPlans ka, kb;
  // n2 transforms of length n1 over x[n2·j1 + j2], twisted by ω_n^(j2·k1), into T[pitch·k1 + j2]
  FftStep a = line_step(FftC2C, n1, n2, src, src_storage, src_stride, n2 * src_stride, n1,
                        reinterpret_cast<char *>(temp), FftC128, 1, pitch);
  a.src_pair = src_pair;
  a.tw_n = n;
  a.twr = tw->data();
  a.twi = tw->data() + n;
  attach_plans(a, ka, sign);
  if (!run_lines(a)) return false;
  // n1 transforms of length n2 over T[pitch·k1 + j2] into X[k1 + n1·k2]
  FftStep b = line_step(FftC2C, n2, n1, reinterpret_cast<char *>(temp), FftC128, pitch, 1, n2, dst, dst_storage,
                        dst_stride, n1 * dst_stride);
  b.scale = scale;
  attach_plans(b, kb, sign);
  return run_lines(b);
}

struct PostJob {
  int64_t n, h, chunk;
  const double *z;  // h interleaved pairs
  const double *twr, *twi;
  const char *src;
  int src_storage;
  int64_t src_stride, src_len;
  char *dst;
  int dst_storage;
  int64_t dst_stride;
  double *zout;  // pre-processing output (C2R)
};

inline void write_pair(char *base, int storage, int64_t off, double re, double im) {
  if (storage == FftC64) {
    float *p = reinterpret_cast<float *>(base) + 2 * off;
    p[0] = float(re);
    p[1] = float(im);
  } else if (storage == FftF32) {
    reinterpret_cast<float *>(base)[off] = float(re);
  } else {
    double *p = reinterpret_cast<double *>(base) + 2 * off;
    p[0] = re;
    p[1] = im;
  }
}

inline void read_pair(const char *base, int storage, int64_t off, double *re, double *im) {
  if (storage == FftC64) {
    const float *p = reinterpret_cast<const float *>(base) + 2 * off;
    *re = p[0];
    *im = p[1];
  } else {
    const double *p = reinterpret_cast<const double *>(base) + 2 * off;
    *re = p[0];
    *im = p[1];
  }
}

// rfft's bins from the half-length transform Z (the reference's rfftLine, k in a chunk of [0, h]).
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));

template <int STORAGE>
void r2c_post(const PostJob &j, int64_t k0, int64_t k1) {
  const int64_t h = j.h;
  auto one = [&](int64_t k) {
    const int64_t a = k == h ? 0 : k, b = k == 0 ? 0 : h - k;  // k mod h, (h − k) mod h
    const double pr = j.z[2 * a], pi = j.z[2 * a + 1], qr = j.z[2 * b], qi = -j.z[2 * b + 1];
    const double er = 0.5 * (pr + qr), ei = 0.5 * (pi + qi);
    const double or_ = 0.5 * (pr - qr), oi_ = 0.5 * (pi - qi);
    const double wr = j.twr[k], wi = j.twi[k];
    const double tr = wr * or_ - wi * oi_, ti = wr * oi_ + wi * or_;
    write_pair(j.dst, STORAGE, k * j.dst_stride, er + ti, ei - tr);
  };
  int64_t k = k0;
  if (j.dst_stride == 1) {
    // four bins at a time where k and h − k are both in (0, h): the same operations on vectors
    // (Z_k read forward, Z_{h−k} backward)
    for (; k < std::max<int64_t>(k0, 1) && k < k1; k++) one(k);
    for (; k + 4 <= k1 && k + 3 < h; k += 4) {
      v4d a0, a1, b0, b1, w0, w1;
      std::memcpy(&a0, j.z + 2 * k, 32), std::memcpy(&a1, j.z + 2 * k + 4, 32);
      std::memcpy(&b0, j.z + 2 * (h - k - 3), 32), std::memcpy(&b1, j.z + 2 * (h - k - 3) + 4, 32);
      std::memcpy(&w0, j.twr + k, 32), std::memcpy(&w1, j.twi + k, 32);
      const v4d pr = __builtin_shufflevector(a0, a1, 0, 2, 4, 6), pi = __builtin_shufflevector(a0, a1, 1, 3, 5, 7);
      const v4d qr = __builtin_shufflevector(b0, b1, 6, 4, 2, 0), qi = -__builtin_shufflevector(b0, b1, 7, 5, 3, 1);
      const v4d er = 0.5 * (pr + qr), ei = 0.5 * (pi + qi);
      const v4d or_ = 0.5 * (pr - qr), oi_ = 0.5 * (pi - qi);
      const v4d tr = w0 * or_ - w1 * oi_, ti = w0 * oi_ + w1 * or_;
      const v4d xr = er + ti, xi = ei - tr;
      if constexpr (STORAGE == FftC64) {
        const v4f fr = __builtin_convertvector(xr, v4f), fi = __builtin_convertvector(xi, v4f);
        const v8f out = __builtin_shufflevector(fr, fi, 0, 4, 1, 5, 2, 6, 3, 7);
        std::memcpy(reinterpret_cast<float *>(j.dst) + 2 * k, &out, 32);
      } else {
        const v4d lo = __builtin_shufflevector(xr, xi, 0, 4, 1, 5), hi = __builtin_shufflevector(xr, xi, 2, 6, 3, 7);
        std::memcpy(reinterpret_cast<double *>(j.dst) + 2 * k, &lo, 32);
        std::memcpy(reinterpret_cast<double *>(j.dst) + 2 * k + 4, &hi, 32);
      }
    }
  }
  for (; k < k1; k++) one(k);
}

void r2c_post_task(void *ctx, int64_t task, int) {
  const PostJob &j = *static_cast<const PostJob *>(ctx);
  const int64_t k0 = task * j.chunk, k1 = std::min(j.h + 1, k0 + j.chunk);
  if (j.dst_storage == FftC64) r2c_post<FftC64>(j, k0, k1);
  else r2c_post<FftC128>(j, k0, k1);
}

// Four complex values at p (pairs of float or double) as vectors of their parts, in order or reversed.
template <int STORAGE, bool REVERSED>
inline void load4(const char *base, int64_t at, v4d *re, v4d *im) {
  v4d a, b;
  if constexpr (STORAGE == FftC64) {
    v8f v;
    std::memcpy(&v, reinterpret_cast<const float *>(base) + 2 * at, 32);
    a = __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), v4d);
    b = __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), v4d);
  } else {
    std::memcpy(&a, reinterpret_cast<const double *>(base) + 2 * at, 32);
    std::memcpy(&b, reinterpret_cast<const double *>(base) + 2 * at + 4, 32);
  }
  if constexpr (REVERSED) {
    *re = __builtin_shufflevector(a, b, 6, 4, 2, 0);
    *im = __builtin_shufflevector(a, b, 7, 5, 3, 1);
  } else {
    *re = __builtin_shufflevector(a, b, 0, 2, 4, 6);
    *im = __builtin_shufflevector(a, b, 1, 3, 5, 7);
  }
}

// irfft's half-length input Z from the bins (the reference's irfftLine, k in a chunk of [0, h)).
template <int STORAGE>
void c2r_pre(const PostJob &j, int64_t k0, int64_t k1) {
  const int64_t h = j.h;
  auto bin = [&](int64_t k, double *re, double *im) {
    if (k < j.src_len) read_pair(j.src, STORAGE, k * j.src_stride, re, im);
    else *re = *im = 0;
  };
  auto one = [&](int64_t k) {
    double xr, xi, yr, yi;
    bin(k, &xr, &xi);
    bin(h - k, &yr, &yi);
    if (k == 0) xi = 0, yi = 0;
    else yi = -yi;
    const double er = xr + yr, ei = xi + yi;
    const double or_ = xr - yr, oi_ = xi - yi;
    const double wr = j.twr[k], wi = -j.twi[k];
    const double tr = wr * or_ - wi * oi_, ti = wr * oi_ + wi * or_;
    j.zout[2 * k] = er - ti;
    j.zout[2 * k + 1] = ei + tr;
  };
  int64_t k = k0;
  if (j.src_stride == 1 && j.src_len > h) {
    // every bin present, side by side: four k at a time where k and h − k are both in (0, h)
    // (X_k read forward, X_{h−k} backward; the same operations on vectors)
    for (; k < std::max<int64_t>(k0, 1) && k < k1; k++) one(k);
    for (; k + 4 <= k1 && k + 3 < h; k += 4) {
      v4d xr, xi, yr, yi, wr, wi;
      load4<STORAGE, false>(j.src, k, &xr, &xi);
      load4<STORAGE, true>(j.src, h - k - 3, &yr, &yi);
      yi = -yi;
      std::memcpy(&wr, j.twr + k, 32);
      std::memcpy(&wi, j.twi + k, 32);
      wi = -wi;
      const v4d er = xr + yr, ei = xi + yi;
      const v4d or_ = xr - yr, oi_ = xi - yi;
      const v4d tr = wr * or_ - wi * oi_, ti = wr * oi_ + wi * or_;
      const v4d zr = er - ti, zi = ei + tr;
      const v4d lo = __builtin_shufflevector(zr, zi, 0, 4, 1, 5), hi = __builtin_shufflevector(zr, zi, 2, 6, 3, 7);
      std::memcpy(j.zout + 2 * k, &lo, 32);
      std::memcpy(j.zout + 2 * k + 4, &hi, 32);
    }
  }
  for (; k < k1; k++) one(k);
}

void c2r_pre_task(void *ctx, int64_t task, int) {
  const PostJob &j = *static_cast<const PostJob *>(ctx);
  const int64_t k0 = task * j.chunk, k1 = std::min(j.h, k0 + j.chunk);
  if (j.src_storage == FftC64) c2r_pre<FftC64>(j, k0, k1);
  else c2r_pre<FftC128>(j, k0, k1);
}

// irfft's n reals from the transformed Z, divided by n.
void c2r_out_task(void *ctx, int64_t task, int) {
  const PostJob &j = *static_cast<const PostJob *>(ctx);
  const int64_t k0 = task * j.chunk, k1 = std::min(j.h, k0 + j.chunk);
  const double dn = double(j.n);
  float *out = reinterpret_cast<float *>(j.dst);
  int64_t k = k0;
  if (j.dst_stride == 1) {
    // reals 2k and 2k + 1 are Z's pair k: four values at a time
    for (int64_t i = 2 * k0; i + 4 <= 2 * k1; i += 4) {
      v4d v;
      std::memcpy(&v, j.z + i, 32);
      const v4f f = __builtin_convertvector(v / dn, v4f);
      std::memcpy(out + i, &f, 16);
      k = (i + 4) / 2;
    }
  }
  for (; k < k1; k++) {
    out[(2 * k) * j.dst_stride] = float(j.z[2 * k] / dn);
    out[(2 * k + 1) * j.dst_stride] = float(j.z[2 * k + 1] / dn);
  }
}

void run_chunks(TaskFn fn, PostJob &j, int64_t count) {
  j.chunk = 8192;
  const int64_t tasks = (count + j.chunk - 1) / j.chunk;
  parallel_for(tasks, threads_for(3.0 * double(count)), fn, &j);
}

// A long real line (even n, n/2 splittable): rfft through a four-step half-length transform.
bool r2c_long(int64_t n, int64_t n1, const char *src, int64_t src_stride, char *dst, int dst_storage, int64_t dst_stride) {
  const int64_t h = n / 2;
  double *z = work_buffers.get(2, size_t(2 * h));
  if (!z) return false;
  // z_k = x[2k] + i·x[2k+1]: the real line read as pairs
  if (!four_step(h, n1, -1, src, FftF32Pair, 2 * src_stride, src_stride, reinterpret_cast<char *>(z), FftC128, 1, 1.0))
    return false;
  auto tw = roots(n, -1, h + 1);
  PostJob j{};
  j.n = n;
  j.h = h;
  j.z = z;
  j.twr = tw->data();
  j.twi = tw->data() + h + 1;
  j.dst = dst;
  j.dst_storage = dst_storage;
  j.dst_stride = dst_stride;
  run_chunks(r2c_post_task, j, h + 1);
  return true;
}

// A long real output line (even n): irfft through a four-step half-length inverse transform.
bool c2r_long(int64_t n, int64_t n1, const char *src, int src_storage, int64_t src_stride, int64_t src_len, char *dst, int64_t dst_stride) {
  const int64_t h = n / 2;
  double *z = work_buffers.get(2, size_t(2 * h)), *zt = work_buffers.get(3, size_t(2 * h));
  if (!z || !zt) return false;
  auto tw = roots(n, -1, h + 1);
  PostJob j{};
  j.n = n;
  j.h = h;
  j.twr = tw->data();
  j.twi = tw->data() + h + 1;
  j.src = src;
  j.src_storage = src_storage;
  j.src_stride = src_stride;
  j.src_len = std::min(src_len, h + 1);
  j.zout = z;
  run_chunks(c2r_pre_task, j, h);
  if (!four_step(h, n1, 1, reinterpret_cast<char *>(z), FftC128, 1, 0, reinterpret_cast<char *>(zt), FftC128, 1, 1.0))
    return false;
  j.z = zt;
  j.dst = dst;
  j.dst_stride = dst_stride;
  run_chunks(c2r_out_task, j, h);
  return true;
}

// One axis of the transform: every line along `axis` of `shape` (src and dst strides in elements).
bool run_axis(int kind, int64_t n, int sign, int nd, const int64_t *shape, int axis, const char *src, int src_storage,
              const int64_t *sst, int64_t src_len, char *dst, int dst_storage, const int64_t *dst_st, double scale) {
  FftStep s{};
  s.kind = kind;
  s.n = n;
  s.ndims = 0;
  s.lines = 1;
  for (int d = 0; d < nd; d++) {
    if (d == axis) continue;
    s.dims[s.ndims] = shape[d];
    s.sdims[s.ndims] = sst[d];
    s.ddims[s.ndims] = dst_st[d];
    s.ndims++;
    s.lines *= shape[d];
  }
  s.src = src;
  s.src_storage = src_storage;
  s.src_stride = sst[axis];
  s.src_len = src_len;
  s.dst = dst;
  s.dst_storage = dst_storage;
  s.dst_stride = dst_st[axis];
  s.scale = scale;
  if (s.lines == 0) return true;
  if (s.lines < FFT_LANES) {
    // too few lines to fill the lanes: split long ones (each line by itself, in order)
    const bool real_packed = kind != FftC2C && n % 2 == 0;
    const int64_t n1 = four_step_split(kind == FftC2C ? n : real_packed ? n / 2 : 0);
    if (n1 > 0) {
      for (int64_t i = 0; i < s.lines; i++) {
        int64_t so = 0, dof = 0, rest = i;
        for (int d = s.ndims - 1; d >= 0; d--) {
          const int64_t c = rest % s.dims[d];
          rest /= s.dims[d];
          so += c * s.sdims[d];
          dof += c * s.ddims[d];
        }
        const char *sp = src + so * storage_size(src_storage);
        char *dp = dst + dof * storage_size(dst_storage);
        bool ok;
        if (kind == FftC2C) ok = four_step(n, n1, sign, sp, src_storage, s.src_stride, 0, dp, dst_storage, s.dst_stride, scale);
        else if (kind == FftR2C) ok = r2c_long(n, n1, sp, s.src_stride, dp, dst_storage, s.dst_stride);
        else ok = c2r_long(n, n1, sp, src_storage, s.src_stride, src_len, dp, s.dst_stride);
        if (!ok) return false;
      }
      return true;
    }
  }
  StepPlans keep;
  attach_plans(s, keep, sign);
  return run_lines(s);
}

void row_major(int nd, const int64_t *shape, int64_t *strides) {
  int64_t acc = 1;
  for (int d = nd - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= shape[d];
  }
}

}  // namespace

// [ndim, input dtype (float32 | complex64), input shape…, input, input strides…, output dtype,
//  output shape…, output (row-major), axis count, axes…, inverse, real, n (irfft's length)]
int fft(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_fft";
  Reader r(desc, words, fn);
  const int nd = int(r.integer(1, MAX_DIMS, "ndim"));
  const int in_dtype = r.dtype("input dtype");
  int64_t ishape[MAX_DIMS], ist[MAX_DIMS], oshape[MAX_DIMS], ost[MAX_DIMS];
  if (!read_shape(r, nd, ishape)) return fail(fn, r.error);
  const char *in = r.pointer("input");
  if (!read_strides(r, nd, ist)) return fail(fn, r.error);
  const int out_dtype = r.dtype("output dtype");
  if (!read_shape(r, nd, oshape)) return fail(fn, r.error);
  char *out = r.pointer("output");
  const int naxes = int(r.integer(1, nd, "axis count"));
  int axes[MAX_DIMS];
  for (int k = 0; k < naxes; k++) axes[k] = int(r.integer(0, nd - 1, "axis"));
  const bool inverse = r.integer(0, 1, "inverse") == 1;
  const bool real = r.integer(0, 1, "real") == 1;
  const int64_t nlast = r.integer(0, int64_t(1) << 52, "n");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  for (int k = 0; k < naxes; k++)
    for (int q = 0; q < k; q++)
      if (axes[k] == axes[q]) return fail(fn, "repeated axis");
  const int last = axes[naxes - 1];
  const int want_in = real && !inverse ? F32 : C64, want_out = real && inverse ? F32 : C64;
  if (in_dtype != want_in || out_dtype != want_out) return fail(fn, "operand dtypes do not match the transform");
  for (int d = 0; d < nd; d++) {
    int64_t want = ishape[d];
    if (real && d == last) want = inverse ? nlast : ishape[d] / 2 + 1;
    if (oshape[d] != want) return fail(fn, "output shape does not match the transform");
  }
  if (real && (inverse ? nlast : ishape[last]) < 1) return fail(fn, "empty transform axis");
  if (size_of(nd, oshape) == 0) return MGCPU_OK;
  if (!in || !out) return fail(fn, "null input or output");
  row_major(nd, oshape, ost);
  const int sign = inverse ? 1 : -1;
  // the complex axes, in order; length-1 axes are identities
  int c2c[MAX_DIMS], nc = 0;
  for (int k = 0; k < naxes; k++) {
    if (real && k == naxes - 1) continue;
    if (ishape[axes[k]] > 1) c2c[nc++] = axes[k];
  }
  const int64_t *wshape = real && !inverse ? oshape : ishape;  // the work buffer's shape
  int64_t wst[MAX_DIMS];
  row_major(nd, wshape, wst);
  // rows of a multiple of 4 KiB put a column's elements in one cache set: pad them by 4 elements
  int64_t wsize = size_of(nd, wshape);
  if (nd >= 2 && wshape[nd - 1] % 256 == 0 && wsize > 0) {
    const int64_t pitch = wshape[nd - 1] + 4;
    int64_t acc = pitch;
    for (int d = nd - 2; d >= 0; d--) {
      wst[d] = acc;
      acc *= wshape[d];
    }
    wsize = acc;
  }
  auto scale_of = [&](int ax) { return inverse ? 1.0 / double(ishape[ax]) : 1.0; };
  char *w = nullptr;
  const bool need_work = real ? nc > 0 : nc > 1;
  if (need_work) {
    w = reinterpret_cast<char *>(work_buffers.get(0, size_t(2 * wsize)));
    if (!w) return fail(fn, "out of memory for the FFT's work array");
  }
  bool ok = true;
  if (!real) {
    if (nc == 0) {
      // every axis has length 1: the transform is the identity
      ok = run_axis(FftC2C, 1, sign, nd, ishape, axes[0], in, FftC64, ist, 1, out, FftC64, ost, 1.0);
    }
    for (int k = 0; k < nc && ok; k++) {
      const int ax = c2c[k];
      const bool first = k == 0, final = k == nc - 1;
      ok = run_axis(FftC2C, ishape[ax], sign, nd, ishape, ax, first ? in : w, first ? FftC64 : FftC128, first ? ist : wst,
                    ishape[ax], final ? out : w, final ? FftC64 : FftC128, final ? ost : wst, scale_of(ax));
    }
  } else if (!inverse) {
    // rfft along the last axis, then complex transforms over the others
    const int64_t n = ishape[last];
    ok = run_axis(FftR2C, n, -1, nd, ishape, last, in, FftF32, ist, n, nc ? w : out, nc ? FftC128 : FftC64, nc ? wst : ost, 1.0);
    for (int k = 0; k < nc && ok; k++) {
      const int ax = c2c[k];
      const bool final = k == nc - 1;
      ok = run_axis(FftC2C, oshape[ax], -1, nd, oshape, ax, w, FftC128, wst, oshape[ax], final ? out : w, final ? FftC64 : FftC128,
                    final ? ost : wst, 1.0);
    }
  } else {
    // inverse complex transforms over the other axes, then bins → reals along the last
    for (int k = 0; k < nc && ok; k++) {
      const int ax = c2c[k];
      const bool first = k == 0;
      ok = run_axis(FftC2C, ishape[ax], 1, nd, ishape, ax, first ? in : w, first ? FftC64 : FftC128, first ? ist : wst, ishape[ax], w,
                    FftC128, wst, scale_of(ax));
    }
    if (ok)
      ok = run_axis(FftC2R, nlast, 1, nd, ishape, last, nc ? w : in, nc ? FftC128 : FftC64, nc ? wst : ist, ishape[last], out, FftF32,
                    ost, 1.0);
  }
  work_buffers.trim();
  if (!ok) return fail(fn, "out of memory for FFT scratch");
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_fft(const double *desc, int32_t words) { return mgcpu::fft(desc, words); }
