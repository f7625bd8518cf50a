// FFT plans and line steps shared by the driver (fft.cpp) and the per-ISA kernels (fft_impl.h).
//
// The arithmetic mirrors the TypeScript reference (ts/backend/cpu/fft.ts) operation for operation,
// in float64: the same factorisation (8, 4, 2, then odd primes ascending), the same Stockham passes
// and butterflies, the same octant-reduced twiddles, Bluestein's chirp-z beyond radix 61, and real
// transforms through a half-length complex FFT. Only long single lines take another route (the
// four-step split below), which changes rounding at the level of float64, far under complex64's.
#ifndef MGCPU_FFT_H
#define MGCPU_FFT_H

#include <cstdint>
#include <memory>
#include <vector>

namespace mgcpu {

constexpr int FFT_MAX_DIRECT_RADIX = 61;
// Lane buffers (real parts, imaginary parts, the Stockham ping-pong pair, Bluestein's) start
// FFT_SKEW vectors (512 bytes) past a multiple of their length: a butterfly reads its inputs a
// power-of-two apart, and buffers a multiple of 4 KiB apart would put them all in one cache set.
constexpr int64_t FFT_SKEW = 16;

struct FftPass {
  int radix;
  int64_t ns;  // product of the earlier radices
  // twiddles ω^(r·b) for b in [0, ns), r in [1, radix): index b·(radix−1) + r−1
  std::vector<double> twr, twi;
  // direct-DFT butterflies (radices other than 2, 3, 4, 5, 7, 8): the radix's roots of unity
  std::vector<double> rootr, rooti;
};

struct FftPlan {
  int64_t n;
  int sign;  // −1 forward (e^(−2πi jk/n)), +1 inverse without 1/n
  bool bluestein = false;
  std::vector<FftPass> passes;
  // Bluestein: chirp e^(sign·πi k²/n), the forward FFT of the conjugate chirp (length m), and the
  // power-of-two plans of length m
  int64_t m = 0;
  std::vector<double> chr, chi, br, bi;
  std::shared_ptr<const FftPlan> fwd, inv;
};

// The plan for length n and direction sign (cached; shared by concurrent calls).
std::shared_ptr<const FftPlan> fft_plan(int64_t n, int sign);
// e^(sign·2πik/n) with k reduced to the first octant, as the reference's twiddle().
void fft_twiddle(int64_t k, int64_t n, int sign, double *re, double *im);

// How a line's values are stored: interleaved complex64, float32 reals, interleaved float64
// pairs (the driver's work buffers between axes), float32 reals read in pairs.
// FftF32Pair: a real line read as complex pairs (re at k·stride, im src_pair floats further).
enum FftStorage : int32_t { FftC64 = 0, FftF32 = 1, FftC128 = 2, FftF32Pair = 3 };
// What a step does to each line: complex → complex, real → n/2 + 1 bins, bins → n reals.
enum FftKind : int32_t { FftC2C = 0, FftR2C = 1, FftC2R = 2 };

// One batch of independent line transforms: line i starts at src + (odometer offset of i over
// dims, src strides) and advances by src_stride elements; likewise dst.
struct FftStep {
  int kind;
  int64_t n;  // transform length (C2R: the real output length)
  const FftPlan *plan;       // length n (C2C; R2C/C2R with odd n or n < 4)
  const FftPlan *half;       // length n/2 (R2C/C2R with even n ≥ 4)
  const double *half_twr, *half_twi;  // twiddle(k, n, −1) for k ≤ n/2 (real transforms)
  int64_t lines;
  int ndims;
  int64_t dims[32];
  int64_t sdims[32], ddims[32];  // per line-index dim: element strides of src and dst
  const char *src;
  int src_storage;
  int64_t src_stride;
  int64_t src_pair;  // FftF32Pair: distance of the imaginary part (floats)
  int64_t src_len;  // elements readable along a line (C2R: bins present; missing bins are 0)
  char *dst;
  int dst_storage;
  int64_t dst_stride;
  double scale;  // C2C: multiplies every output (1 = none); C2R divides by n instead
  // four-step: element k of line i is multiplied by e^(sign·2πi·(i·k mod tw_n)/tw_n) after the
  // transform (tw_n = 0: none); table of tw_n roots
  int64_t tw_n;
  const double *twr, *twi;
};

// Scratch doubles a thread needs to run a group of `lanes` lines of a step.
int64_t fft_scratch_doubles(const FftStep &s, int lanes);

}  // namespace mgcpu

#endif
