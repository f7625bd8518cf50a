// The C ABI of the native CPU kernels and the drivers that are the same on every instruction set:
// descriptor parsing and validation, the tiled elementwise interpreter, and the loops of
// reductions, softmax, argmax/argmin and scans. The arithmetic lives in isa_*.cpp.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

// ---- errors ------------------------------------------------------------------------------------

namespace {
thread_local std::string last_error;
}

void set_error(const char *fn, const std::string &message) {
  last_error = std::string("[") + fn + "] " + message;
}
int fail(const char *fn, const std::string &message) {
  set_error(fn, message);
  return MGCPU_ERROR;
}
int unsupported(const char *fn, const std::string &message) {
  set_error(fn, message);
  return MGCPU_UNSUPPORTED;
}

// ---- instruction set ---------------------------------------------------------------------------

namespace {
std::atomic<const Isa *> current_isa{nullptr};
std::atomic<int> last_threads{1};

const Isa *best_isa() {
#if defined(__x86_64__)
  const char *env = std::getenv("MG_CPU_ISA");
  const std::string want = env ? env : "";
  if (want == "baseline" || want == "sse2") return &isa_baseline();
  if (want != "avx2" && cpu_has_avx512()) return &isa_avx512();
  if (cpu_has_avx2_fma()) return &isa_avx2();
#endif
  return &isa_baseline();
}
}  // namespace

const Isa &isa() {
  const Isa *p = current_isa.load(std::memory_order_acquire);
  if (!p) {
    p = best_isa();
    current_isa.store(p, std::memory_order_release);
  }
  return *p;
}

void note_threads(int n) { last_threads.store(n, std::memory_order_relaxed); }

const char *dtype_name(int d) {
  static const char *names[DtypeCount] = {"bool",  "uint8",   "uint16",  "uint32", "uint64",
                                          "int8",  "int16",   "int32",   "int64",  "float16",
                                          "float32", "float64", "bfloat16", "complex64"};
  return d >= 0 && d < DtypeCount ? names[d] : "?";
}

// ---- shapes ---------------------------------------------------------------------------------------

namespace {

// Drops size-1 dimensions and merges neighbours every operand walks contiguously together.
// strides[k] points at operand k's MAX_DIMS strides; returns the new ndim.
int collapse(int ndim, int64_t *shape, int count, int64_t *const *strides) {
  int out = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    if (out > 0) {
      bool merge = true;
      for (int k = 0; k < count && merge; k++) merge = strides[k][out - 1] == strides[k][d] * shape[d];
      if (merge) {
        shape[out - 1] *= shape[d];
        for (int k = 0; k < count; k++) strides[k][out - 1] = strides[k][d];
        continue;
      }
    }
    shape[out] = shape[d];
    for (int k = 0; k < count; k++) strides[k][out] = strides[k][d];
    out++;
  }
  return out;
}

}  // namespace

// ---- elementwise programs -----------------------------------------------------------------------

namespace {

enum InMode { InScalar, InContiguous, InGather };

struct Exec {
  Program *p;
  const Isa *isa;
  int in_mode[MAX_OPERANDS];
  alignas(16) char scalar_value[MAX_OPERANDS][16];  // scalar inputs, loaded once (repr)
  bool out_direct[MAX_OPERANDS];
  // where each operand lives in a thread's scratch (in registers of TILE·8 bytes); -1 = none
  int reg_of[3 * MAX_OPERANDS];
  int regs;
  int64_t chunk;  // elements per task (a multiple of the tile)
  int64_t tile;   // elements per tile: TILE when registers are used, larger when none are
  // per instruction: its kernel, and whether it is an identity cast from a gathered input into a
  // direct output (then gathered in place: a strided copy is one pass)
  std::vector<KernelFn> fns;
  std::vector<char> gather_into_output;
};

void gather(const Exec &e, int k, int64_t i0, int64_t n, void *dst) {
  const Program &p = *e.p;
  const Operand &op = p.in[k];
  const int nd = p.ndim;
  const int64_t *shape = p.shape;
  const int64_t *st = op.strides;
  const int esize = dtype_size(op.dtype);
  const int rsize = repr_size(op.dtype);
  int64_t idx[MAX_DIMS];
  int64_t off = 0, rest = i0;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
    off += idx[d] * st[d];
  }
  char *out = static_cast<char *>(dst);
  const int last = nd - 1;
  while (n > 0) {
    int64_t run = std::min(shape[last] - idx[last], n);
    e.isa->load(out, op.ptr + off * esize, op.dtype, st[last], run);
    out += run * rsize;
    n -= run;
    if (n == 0) break;
    off += run * st[last];
    idx[last] += run;
    for (int d = last; d > 0 && idx[d] == shape[d]; d--) {
      off -= shape[d] * st[d];
      idx[d] = 0;
      idx[d - 1]++;
      off += st[d - 1];
    }
  }
}

void run_tiles(void *ctx, int64_t task, int thread) {
  const Exec &e = *static_cast<const Exec *>(ctx);
  const Program &p = *e.p;
  const int64_t begin = task * e.chunk;
  const int64_t end = std::min(p.size, begin + e.chunk);
  // no registers (contiguous or scalar operands, direct outputs): no scratch to look up
  char *scratch = e.regs > 0 ? static_cast<char *>(thread_scratch(thread, size_t(e.regs) * TILE * 8 + 64)) : nullptr;
  if (e.regs > 0 && !scratch) return;  // checked by the caller before the run
  const int n_ops = p.n_in + p.n_out + p.n_temp;
  void *slot[3 * MAX_OPERANDS];
  bool scalar[3 * MAX_OPERANDS];
  for (int64_t i0 = begin; i0 < end; i0 += e.tile) {
    const int64_t n = std::min(e.tile, end - i0);
    for (int k = 0; k < p.n_in; k++) {
      scalar[k] = e.in_mode[k] == InScalar;
      if (e.in_mode[k] == InScalar) slot[k] = const_cast<char *>(e.scalar_value[k]);
      else if (e.in_mode[k] == InContiguous) slot[k] = p.in[k].ptr + i0 * dtype_size(p.in[k].dtype);
      else if (e.reg_of[k] >= 0) {
        slot[k] = scratch + size_t(e.reg_of[k]) * TILE * 8;
        gather(e, k, i0, n, slot[k]);
      } else {
        slot[k] = nullptr;  // only read through gather_into_output
      }
    }
    for (int k = 0; k < p.n_out; k++) {
      const int o = p.n_in + k;
      scalar[o] = false;
      slot[o] = e.out_direct[k] ? p.out_ptr[k] + i0 * dtype_size(p.out_dtype[k])
                                : scratch + size_t(e.reg_of[o]) * TILE * 8;
    }
    for (int k = p.n_in + p.n_out; k < n_ops; k++) {
      scalar[k] = false;
      slot[k] = scratch + size_t(e.reg_of[k]) * TILE * 8;
    }
    for (int j = 0; j < p.n_instr; j++) {
      const Instr &in = p.instr[j];
      if (e.gather_into_output[size_t(j)]) {
        gather(e, in.a, i0, n, slot[in.dst]);
        continue;
      }
      const int mask = (scalar[in.a] ? 1 : 0) | (in.b >= 0 && scalar[in.b] ? 2 : 0) | (in.c >= 0 && scalar[in.c] ? 4 : 0);
      e.fns[size_t(j)](slot[in.dst], slot[in.a], in.b >= 0 ? slot[in.b] : nullptr, in.c >= 0 ? slot[in.c] : nullptr, n, mask);
      if (is_16bit_float(in.out_dtype) && in.op != OpCast)
        e.isa->round_grid(static_cast<float *>(slot[in.dst]), in.out_dtype, n);
    }
    for (int k = 0; k < p.n_out; k++)
      if (!e.out_direct[k])
        e.isa->store(p.out_ptr[k] + i0 * dtype_size(p.out_dtype[k]), slot[p.n_in + k], p.out_dtype[k], n);
  }
}

int elementwise(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_elementwise";
  Reader r(desc, words, fn);
  static thread_local Program prog;
  static thread_local std::vector<Instr> instrs;
  Program &p = prog;
  p.ndim = int(r.integer(0, MAX_DIMS, "ndim"));
  p.n_in = int(r.integer(0, MAX_OPERANDS, "input count"));
  p.n_out = int(r.integer(1, MAX_OPERANDS, "output count"));
  p.n_temp = int(r.integer(0, MAX_OPERANDS, "temporary count"));
  p.n_instr = int(r.integer(1, 1 << 20, "instruction count"));
  if (!r.ok) return fail(fn, r.error);
  if (!read_shape(r, p.ndim, p.shape)) return fail(fn, r.error);
  for (int k = 0; k < p.n_in; k++) {
    p.in[k].ptr = r.pointer("input pointer");
    p.in[k].dtype = r.dtype("input dtype");
    if (!read_strides(r, p.ndim, p.in[k].strides)) return fail(fn, r.error);
  }
  for (int k = 0; k < p.n_out; k++) {
    p.out_ptr[k] = r.pointer("output pointer");
    p.out_dtype[k] = r.dtype("output dtype");
  }
  for (int k = 0; k < p.n_temp; k++) p.temp_dtype[k] = r.dtype("temporary dtype");
  const int n_ops = p.n_in + p.n_out + p.n_temp;
  instrs.resize(size_t(p.n_instr));
  for (int j = 0; j < p.n_instr; j++) {
    Instr &in = instrs[size_t(j)];
    in.op = int32_t(r.integer(0, OpCount - 1, "opcode"));
    in.dtype = r.dtype("instruction dtype");
    in.out_dtype = r.dtype("instruction output dtype");
    in.dst = int32_t(r.integer(p.n_in, n_ops - 1, "destination"));
    in.a = int32_t(r.integer(0, n_ops - 1, "operand a"));
    in.b = int32_t(r.integer(-1, n_ops - 1, "operand b"));
    in.c = int32_t(r.integer(-1, n_ops - 1, "operand c"));
  }
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has " + std::to_string(words - r.pos) + " extra words");
  p.instr = instrs.data();

  // types and def-before-use
  auto dtype_of = [&](int o) {
    return o < p.n_in ? p.in[o].dtype : o < p.n_in + p.n_out ? p.out_dtype[o - p.n_in] : p.temp_dtype[o - p.n_in - p.n_out];
  };
  // per-call scratch lives in thread-local vectors whose capacity persists: no allocation per call
  static thread_local char written[3 * MAX_OPERANDS];
  std::memset(written, 0, size_t(n_ops));
  std::memset(written, 1, size_t(p.n_in));
  const Isa &is = isa();
  static thread_local Exec exec;
  Exec &e = exec;
  e.fns.resize(size_t(p.n_instr));
  for (int j = 0; j < p.n_instr; j++) {
    const Instr &in = p.instr[j];
    const int arity = op_arity(in.op);
    const int srcs[3] = {in.a, in.b, in.c};
    for (int s = 0; s < 3; s++) {
      if (s < arity) {
        if (srcs[s] < 0) return fail(fn, "instruction " + std::to_string(j) + " lacks an operand");
        if (!written[size_t(srcs[s])]) return fail(fn, "instruction " + std::to_string(j) + " reads an operand before it is written");
        const int want = (in.op == OpSelect && s == 0) ? int(Bool) : in.dtype;
        if (dtype_of(srcs[s]) != want)
          return fail(fn, "instruction " + std::to_string(j) + " operand dtype " + dtype_name(dtype_of(srcs[s])) + " is not " + dtype_name(want));
      } else if (srcs[s] != -1) {
        return fail(fn, "instruction " + std::to_string(j) + " has too many operands");
      }
    }
    if (dtype_of(in.dst) != in.out_dtype) return fail(fn, "instruction " + std::to_string(j) + " destination dtype mismatch");
    e.fns[size_t(j)] = is.kernel(in.op, in.dtype, in.out_dtype);
    if (!e.fns[size_t(j)])
      return unsupported(fn, "no native kernel for opcode " + std::to_string(in.op) + " on " + dtype_name(in.dtype) + " → " + dtype_name(in.out_dtype));
    written[size_t(in.dst)] = 1;
  }
  for (int k = 0; k < p.n_out; k++)
    if (!written[size_t(p.n_in + k)]) return fail(fn, "output " + std::to_string(k) + " is never written");

  p.size = size_of(p.ndim, p.shape);
  if (p.size == 0) return MGCPU_OK;

  // collapse: outputs are row-major contiguous
  e.p = &p;
  e.isa = &is;
  int64_t out_strides[MAX_DIMS];
  {
    int64_t s = 1;
    for (int d = p.ndim - 1; d >= 0; d--) {
      out_strides[d] = s;
      s *= p.shape[d];
    }
  }
  int64_t *all[MAX_OPERANDS + 1];
  for (int k = 0; k < p.n_in; k++) all[k] = p.in[k].strides;
  all[p.n_in] = out_strides;
  p.ndim = collapse(p.ndim, p.shape, p.n_in + 1, all);
  if (p.ndim == 0) {
    p.ndim = 1;
    p.shape[0] = 1;
    for (int k = 0; k < p.n_in; k++) p.in[k].strides[0] = 0;
  }

  // operand placement
  int regs = 0;
  for (int k = 0; k < n_ops; k++) e.reg_of[k] = -1;
  for (int k = 0; k < p.n_in; k++) {
    bool zero = true, contiguous = true;
    int64_t expect = 1;
    for (int d = p.ndim - 1; d >= 0; d--) {
      if (p.in[k].strides[d] != 0) zero = false;
      if (p.in[k].strides[d] != expect) contiguous = false;
      expect *= p.shape[d];
    }
    if (zero) {
      e.in_mode[k] = InScalar;
      is.load(e.scalar_value[k], p.in[k].ptr, p.in[k].dtype, 0, 1);
    } else if (contiguous && !is_16bit_float(p.in[k].dtype)) {
      e.in_mode[k] = InContiguous;
    } else {
      e.in_mode[k] = InGather;
    }
  }
  for (int k = 0; k < p.n_out; k++) e.out_direct[k] = !is_16bit_float(p.out_dtype[k]);
  // identity casts from a gathered input into a direct output copy in one pass
  char gathered_elsewhere[MAX_OPERANDS];
  for (int k = 0; k < p.n_in; k++) gathered_elsewhere[k] = 0;
  e.gather_into_output.assign(size_t(p.n_instr), 0);
  for (int j = 0; j < p.n_instr; j++) {
    const Instr &in = p.instr[j];
    if (in.op == OpCast && in.dtype == in.out_dtype && in.a < p.n_in && e.in_mode[in.a] == InGather &&
        in.dst >= p.n_in && in.dst < p.n_in + p.n_out && e.out_direct[in.dst - p.n_in])
      e.gather_into_output[size_t(j)] = 1;
    else
      for (int s : {in.a, in.b, in.c})
        if (s >= 0 && s < p.n_in) gathered_elsewhere[s] = 1;
  }
  for (int k = 0; k < p.n_in; k++)
    if (e.in_mode[k] == InGather && gathered_elsewhere[k]) e.reg_of[k] = regs++;
  for (int k = 0; k < p.n_out; k++)
    if (!e.out_direct[k]) e.reg_of[p.n_in + k] = regs++;
  for (int k = p.n_in + p.n_out; k < n_ops; k++) e.reg_of[k] = regs++;
  e.regs = regs;

  // Work in ~ns: a pass over memory costs ~0.3 ns an element, a cheap instruction ~0.1, math more.
  double per_element = 0.3;
  for (int j = 0; j < p.n_instr; j++) {
    const int op = p.instr[j].op;
    const bool math = (op >= OpSqrt && op <= OpErfInv) || op == OpPower || op == OpLogAddExp || op == OpArcTan2 ||
                      op == OpDivide || op == OpRemainder || p.instr[j].dtype == C64;
    per_element += math ? 1.0 : 0.1;
  }
  const int threads = threads_for(double(p.size) * per_element);
  // A program that needs no tile registers (contiguous operands, one instruction) loops over long
  // tiles: less per-tile bookkeeping. Results never depend on the tile size (elementwise kernels).
  e.tile = regs == 0 ? 16 * TILE : TILE;
  e.chunk = e.tile * std::max<int64_t>(1, std::min<int64_t>(64, (p.size / e.tile) / (4 * threads) + 1));
  const int64_t tasks = (p.size + e.chunk - 1) / e.chunk;
  if (regs > 0 && !thread_scratch(0, size_t(regs) * TILE * 8 + 64)) return fail(fn, "out of memory for tile registers");
  note_threads(threads);
  if (tasks == 1) run_tiles(&e, 0, 0);  // a small program: no pool
  else parallel_for(tasks, threads, run_tiles, &e);
  return MGCPU_OK;
}

}  // namespace

// ---- reductions -------------------------------------------------------------------------------------

namespace {

constexpr int64_t RBLOCK = 1 << 16;  // a run is reduced in blocks of this many elements, combined in order

enum { RSum = 0, RProd = 1, RMax = 2, RMin = 3, RAnd = 4, ROr = 5 };

bool is_signed_int(int d) { return d == I8 || d == I16 || d == I32 || d == I64; }

void acc_init(int type, int dtype, double *a) {
  a[0] = a[1] = a[2] = a[3] = 0;
  if (dtype == C64) {
    if (type == RProd || type == RAnd) a[0] = 1;
    return;
  }
  if (is_float(dtype)) {
    a[0] = type == RProd || type == RAnd ? 1.0 : type == RMax ? -__builtin_inf() : type == RMin ? __builtin_inf() : 0.0;
    return;
  }
  // integers and bool
  uint64_t u = 0;
  bool sgn = is_signed_int(dtype);
  switch (type) {
    case RProd: u = 1; break;
    case RMax: u = sgn ? uint64_t(std::numeric_limits<int64_t>::min()) : 0; break;
    case RMin: u = sgn ? uint64_t(std::numeric_limits<int64_t>::max()) : ~uint64_t(0); break;
    case RAnd: u = 1; break;
    default: u = 0;
  }
  if (type == RAnd || type == ROr) {
    uint8_t b = uint8_t(u);
    std::memcpy(a, &b, 1);
  } else {
    std::memcpy(a, &u, 8);
  }
}

double fmax_nan(double a, double v) { return a != a ? a : (v != v || v > a) ? v : a; }
double fmin_nan(double a, double v) { return a != a ? a : (v != v || v < a) ? v : a; }

void acc_combine(int type, int dtype, double *a, const double *b) {
  if (dtype == C64) {
    switch (type) {
      case RSum: a[0] += b[0]; a[1] += b[1]; return;
      case RProd: {
        double re = a[0] * b[0] - a[1] * b[1];
        a[1] = a[0] * b[1] + a[1] * b[0];
        a[0] = re;
        return;
      }
      case RAnd: if (b[0] == 0) a[0] = 0; return;
      case ROr: if (b[0] != 0) a[0] = 1; return;
      default: {
        if (b[2] == 0) return;
        if (a[2] != 0) {
          if (a[0] != a[0] || a[1] != a[1]) return;
          bool nan = b[0] != b[0] || b[1] != b[1];
          bool better = type == RMax ? (b[0] > a[0] || (b[0] == a[0] && b[1] > a[1])) : (b[0] < a[0] || (b[0] == a[0] && b[1] < a[1]));
          if (!nan && !better) return;
        }
        a[0] = b[0], a[1] = b[1], a[2] = 1;
        return;
      }
    }
  }
  if (is_float(dtype)) {
    switch (type) {
      case RSum: a[0] += b[0]; return;
      case RProd: a[0] *= b[0]; return;
      case RMax: a[0] = fmax_nan(a[0], b[0]); return;
      case RMin: a[0] = fmin_nan(a[0], b[0]); return;
      case RAnd: if (b[0] == 0) a[0] = 0; return;
      case ROr: if (b[0] != 0) a[0] = 1; return;
      default: return;
    }
  }
  if (type == RAnd || type == ROr) {
    uint8_t x, y;
    std::memcpy(&x, a, 1);
    std::memcpy(&y, b, 1);
    x = type == RAnd ? uint8_t(x & y) : uint8_t(x | y);
    std::memcpy(a, &x, 1);
    return;
  }
  uint64_t x, y;
  std::memcpy(&x, a, 8);
  std::memcpy(&y, b, 8);
  bool sgn = is_signed_int(dtype);
  switch (type) {
    case RSum: x += y; break;
    case RProd: x *= y; break;
    case RMax: x = sgn ? uint64_t(std::max(int64_t(x), int64_t(y))) : std::max(x, y); break;
    case RMin: x = sgn ? uint64_t(std::min(int64_t(x), int64_t(y))) : std::min(x, y); break;
    default: break;
  }
  std::memcpy(a, &x, 8);
}

// Stores an accumulator into the output's storage with the reference's rounding.
void acc_store(int type, int dtype, const double *a, char *dst, bool empty) {
  if (type == RAnd || type == ROr) {
    uint8_t v;
    if (dtype == C64 || is_float(dtype)) v = a[0] != 0;
    else std::memcpy(&v, a, 1);
    *reinterpret_cast<uint8_t *>(dst) = v;
    return;
  }
  switch (dtype) {
    case C64: {
      float re = float(a[0]), im = float(a[1]);
      std::memcpy(dst, &re, 4);
      std::memcpy(dst + 4, &im, 4);
      return;
    }
    case F32: { float v = float(a[0]); std::memcpy(dst, &v, 4); return; }
    case F64: std::memcpy(dst, a, 8); return;
    case F16: { uint16_t v = f64_to_f16(a[0]); std::memcpy(dst, &v, 2); return; }
    case BF16: { uint16_t v = f32_to_bf16(float(a[0])); std::memcpy(dst, &v, 2); return; }
    default: break;
  }
  uint64_t u;
  std::memcpy(&u, a, 8);
  // max/min of nothing: the reference stores its ±inf start through a number conversion (0)
  if (empty && (type == RMax || type == RMin)) u = 0;
  if (dtype == Bool) u = u != 0;
  std::memcpy(dst, &u, size_t(dtype_size(dtype)));  // little-endian: the low bytes wrap
}

struct ReducePlan {
  int type, dtype;
  const Isa *isa;
  char *in;
  char *out;
  // kept dims (outer → inner) and reduced dims (outer → inner), collapsed
  int nk, nr;
  int64_t kshape[MAX_DIMS], kstride[MAX_DIMS];
  int64_t rshape[MAX_DIMS], rstride[MAX_DIMS];
  int64_t out_count, red_count;
  int64_t outputs_per_task;
  // column mode: the innermost kept dim is contiguous and not reduced
  int64_t col_chunk;
};

// Reduces the whole reduced space starting at `base` into acc (runs of the innermost reduced dim,
// in blocks of RBLOCK, combined in odometer order).
void reduce_space(const ReducePlan &p, const char *base, double *acc) {
  const int esize = dtype_size(p.dtype);
  const int last = p.nr - 1;
  const int64_t run = p.rshape[last], rs = p.rstride[last];
  int64_t idx[MAX_DIMS] = {0};
  int64_t off = 0;
  const int64_t runs = p.red_count / run;
  for (int64_t r = 0; r < runs; r++) {
    for (int64_t b0 = 0; b0 < run; b0 += RBLOCK) {
      double part[ACC_DOUBLES];
      acc_init(p.type, p.dtype, part);
      p.isa->reduce_run(p.type, p.dtype, base + (off + b0 * rs) * esize, rs, std::min(RBLOCK, run - b0), part);
      acc_combine(p.type, p.dtype, acc, part);
    }
    for (int d = last - 1; d >= 0; d--) {
      idx[d]++;
      off += p.rstride[d];
      if (idx[d] < p.rshape[d]) break;
      off -= p.rshape[d] * p.rstride[d];
      idx[d] = 0;
    }
  }
}

int64_t kept_offset(const ReducePlan &p, int64_t o) {
  int64_t off = 0;
  for (int d = p.nk - 1; d >= 0; d--) {
    off += (o % p.kshape[d]) * p.kstride[d];
    o /= p.kshape[d];
  }
  return off;
}

void reduce_outputs_task(void *ctx, int64_t task, int) {
  const ReducePlan &p = *static_cast<const ReducePlan *>(ctx);
  const int64_t o0 = task * p.outputs_per_task, o1 = std::min(p.out_count, o0 + p.outputs_per_task);
  const int esize = dtype_size(p.dtype);
  const int osize = (p.type == RAnd || p.type == ROr) ? 1 : esize;
  for (int64_t o = o0; o < o1; o++) {
    double acc[ACC_DOUBLES];
    acc_init(p.type, p.dtype, acc);
    if (p.red_count > 0) reduce_space(p, p.in + kept_offset(p, o) * esize, acc);
    acc_store(p.type, p.dtype, acc, p.out + o * osize, p.red_count == 0);
  }
}

// one full reduction split into blocks: partials computed in parallel, combined in order
struct BlockPlan {
  const ReducePlan *p;
  double *partials;
  int64_t blocks;
};
void reduce_block_task(void *ctx, int64_t task, int) {
  const BlockPlan &b = *static_cast<const BlockPlan *>(ctx);
  const ReducePlan &p = *b.p;
  double *part = b.partials + task * ACC_DOUBLES;
  acc_init(p.type, p.dtype, part);
  const int64_t n = p.rshape[0];
  const int64_t b0 = task * RBLOCK;
  p.isa->reduce_run(p.type, p.dtype, p.in + b0 * p.rstride[0] * dtype_size(p.dtype), p.rstride[0],
                    std::min(RBLOCK, n - b0), part);
}

// column mode: out[o, j] over a contiguous innermost kept dim j; accumulators per column chunk
void reduce_columns_task(void *ctx, int64_t task, int thread) {
  const ReducePlan &p = *static_cast<const ReducePlan *>(ctx);
  const int64_t cols = p.kshape[p.nk - 1];
  const int64_t chunks = (cols + p.col_chunk - 1) / p.col_chunk;
  const int64_t outer = task / chunks;
  const int64_t j0 = (task % chunks) * p.col_chunk, j1 = std::min(cols, j0 + p.col_chunk);
  const int64_t m = j1 - j0;
  const int esize = dtype_size(p.dtype);
  const int osize = (p.type == RAnd || p.type == ROr) ? 1 : esize;
  // the kept offset of (outer, j0)
  int64_t base = j0;
  for (int64_t d = p.nk - 2, o = outer; d >= 0; d--) {
    base += (o % p.kshape[d]) * p.kstride[d];
    o /= p.kshape[d];
  }
  int64_t idx[MAX_DIMS] = {0};
  int64_t off = 0;
  if (p.dtype == F32 && (p.type == RSum || p.type == RMax || p.type == RMin)) {
    // float32 sum/max/min: one contiguous double per column and the rows combined in the same
    // order and the same way as reduce_rows (so, vectorisable, the same bits), each stored once
    double *__restrict a = static_cast<double *>(thread_scratch(thread, size_t(m) * 8));
    if (!a) return;
    const double init = p.type == RSum ? 0.0 : p.type == RMax ? -__builtin_inf() : __builtin_inf();
    for (int64_t j = 0; j < m; j++) a[j] = init;
    for (int64_t r = 0; r < p.red_count; r++) {
      const float *__restrict x = reinterpret_cast<const float *>(p.in) + base + off;
      if (p.type == RSum)
        for (int64_t j = 0; j < m; j++) a[j] += double(x[j]);
      else if (p.type == RMax)
        for (int64_t j = 0; j < m; j++) {  // fmax_nan without branches (vector selects)
          const double c = a[j], v = double(x[j]);
          const bool take = (c == c) & ((v != v) | (v > c));
          a[j] = take ? v : c;
        }
      else
        for (int64_t j = 0; j < m; j++) {
          const double c = a[j], v = double(x[j]);
          const bool take = (c == c) & ((v != v) | (v < c));
          a[j] = take ? v : c;
        }
      for (int d = p.nr - 1; d >= 0; d--) {
        idx[d]++;
        off += p.rstride[d];
        if (idx[d] < p.rshape[d]) break;
        off -= p.rshape[d] * p.rstride[d];
        idx[d] = 0;
      }
    }
    float *o = reinterpret_cast<float *>(p.out) + outer * cols + j0;
    for (int64_t j = 0; j < m; j++) o[j] = float(a[j]);
    return;
  }
  double *acc = static_cast<double *>(thread_scratch(thread, size_t(m) * ACC_DOUBLES * 8));
  if (!acc) return;
  for (int64_t j = 0; j < m; j++) acc_init(p.type, p.dtype, acc + j * ACC_DOUBLES);
  for (int64_t r = 0; r < p.red_count; r++) {
    p.isa->reduce_rows(p.type, p.dtype, acc, p.in + (base + off) * esize, m);
    for (int d = p.nr - 1; d >= 0; d--) {
      idx[d]++;
      off += p.rstride[d];
      if (idx[d] < p.rshape[d]) break;
      off -= p.rshape[d] * p.rstride[d];
      idx[d] = 0;
    }
  }
  char *out = p.out + (outer * cols + j0) * osize;
  for (int64_t j = 0; j < m; j++) acc_store(p.type, p.dtype, acc + j * ACC_DOUBLES, out + j * osize, p.red_count == 0);
}

int reduce(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_reduce";
  Reader r(desc, words, fn);
  ReducePlan p;
  p.isa = &isa();
  int ndim = int(r.integer(0, MAX_DIMS, "ndim"));
  p.type = int(r.integer(0, 5, "reduction type"));
  p.dtype = r.dtype("dtype");
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  if (!read_shape(r, ndim, shape)) return fail(fn, r.error);
  p.in = r.pointer("input pointer");
  if (!read_strides(r, ndim, strides)) return fail(fn, r.error);
  int naxes = int(r.integer(0, ndim, "axis count"));
  bool reduced[MAX_DIMS] = {false};
  for (int i = 0; i < naxes; i++) reduced[r.integer(0, std::max(0, ndim - 1), "axis")] = true;
  p.out = r.pointer("output pointer");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (p.dtype == C64 && p.type != RSum && p.type != RProd && p.type != RMax && p.type != RMin && p.type != RAnd && p.type != ROr)
    return unsupported(fn, "complex64");

  p.nk = p.nr = 0;
  for (int d = 0; d < ndim; d++) {
    if (reduced[d]) {
      p.rshape[p.nr] = shape[d];
      p.rstride[p.nr++] = strides[d];
    } else {
      p.kshape[p.nk] = shape[d];
      p.kstride[p.nk++] = strides[d];
    }
  }
  p.out_count = size_of(p.nk, p.kshape);
  p.red_count = size_of(p.nr, p.rshape);
  if (p.out_count == 0) return MGCPU_OK;
  // kept dims collapse against the (contiguous) output; reduced dims among themselves
  {
    int64_t ostr[MAX_DIMS];
    int64_t s = 1;
    for (int d = p.nk - 1; d >= 0; d--) {
      ostr[d] = s;
      s *= p.kshape[d];
    }
    int64_t *ks[2] = {p.kstride, ostr};
    p.nk = collapse(p.nk, p.kshape, 2, ks);
    int64_t *rs[1] = {p.rstride};
    if (p.red_count > 0) p.nr = collapse(p.nr, p.rshape, 1, rs);
  }
  if (p.red_count > 0 && p.nr == 0) {
    p.nr = 1;
    p.rshape[0] = 1;
    p.rstride[0] = 0;
  }
  if (p.nk == 0) {
    p.nk = 1;
    p.kshape[0] = 1;
    p.kstride[0] = 0;
  }
  const double work = 0.3 * double(p.out_count) * double(std::max<int64_t>(p.red_count, 1));  // ~ns
  int threads = threads_for(work);
  note_threads(threads);

  if (p.red_count > 0 && p.nk >= 1 && p.kstride[p.nk - 1] == 1 && p.kshape[p.nk - 1] >= 16 &&
      (p.nr == 0 || p.rstride[p.nr - 1] != 1)) {
    // columns: the innermost kept dim is contiguous
    const int64_t cols = p.kshape[p.nk - 1];
    const int64_t outer = p.out_count / cols;
    p.col_chunk = std::min<int64_t>(cols, 2048);
    const int64_t tasks = outer * ((cols + p.col_chunk - 1) / p.col_chunk);
    parallel_for(tasks, threads, reduce_columns_task, &p);
    return MGCPU_OK;
  }
  if (p.out_count == 1 && p.nr == 1 && p.rshape[0] > RBLOCK) {
    BlockPlan b{&p, nullptr, (p.rshape[0] + RBLOCK - 1) / RBLOCK};
    std::vector<double> partials(size_t(b.blocks) * ACC_DOUBLES);
    b.partials = partials.data();
    parallel_for(b.blocks, threads, reduce_block_task, &b);
    double acc[ACC_DOUBLES];
    acc_init(p.type, p.dtype, acc);
    for (int64_t i = 0; i < b.blocks; i++) acc_combine(p.type, p.dtype, acc, b.partials + i * ACC_DOUBLES);
    acc_store(p.type, p.dtype, acc, p.out, false);
    return MGCPU_OK;
  }
  p.outputs_per_task = std::max<int64_t>(1, p.out_count / (8 * threads));
  parallel_for((p.out_count + p.outputs_per_task - 1) / p.outputs_per_task, threads, reduce_outputs_task, &p);
  return MGCPU_OK;
}

}  // namespace

// ---- softmax ------------------------------------------------------------------------------------------

namespace {

struct SoftmaxPlan {
  const Isa *isa;
  int dtype, lse;
  char *in, *out;
  int64_t rows, n;
  int nd;  // outer dims (all but the last)
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  int64_t last_stride;
  int64_t rows_per_task;
};

void softmax_task(void *ctx, int64_t task, int thread) {
  const SoftmaxPlan &p = *static_cast<const SoftmaxPlan *>(ctx);
  const int esize = dtype_size(p.dtype);
  const bool wide = p.dtype == F64;
  const int rsize = wide ? 8 : 4;
  const bool direct_in = (p.dtype == F32 || p.dtype == F64) && p.last_stride == 1;
  const bool direct_out = (p.dtype == F32 || p.dtype == F64) && !p.lse;
  char *buf = static_cast<char *>(thread_scratch(thread, size_t(p.n) * rsize * 2 + 64));
  if (!buf) return;
  char *tin = buf, *tout = buf + size_t(p.n) * rsize;
  const int64_t r0 = task * p.rows_per_task, r1 = std::min(p.rows, r0 + p.rows_per_task);
  for (int64_t row = r0; row < r1; row++) {
    int64_t off = 0, rest = row;
    for (int d = p.nd - 1; d >= 0; d--) {
      off += (rest % p.shape[d]) * p.strides[d];
      rest /= p.shape[d];
    }
    const char *src = p.in + off * esize;
    if (!direct_in) {
      p.isa->load(tin, src, p.dtype, p.last_stride, p.n);
      src = tin;
    }
    const int64_t out_len = p.lse ? 1 : p.n;
    char *dst = direct_out ? p.out + row * p.n * esize : tout;
    p.isa->softmax_row(wide ? F64 : F32, src, dst, p.n, p.lse);
    if (!direct_out) {
      if (is_16bit_float(p.dtype)) p.isa->round_grid(reinterpret_cast<float *>(dst), p.dtype, out_len);
      p.isa->store(p.out + row * out_len * esize, dst, p.dtype, out_len);
    }
  }
}

int softmax(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_softmax";
  Reader r(desc, words, fn);
  SoftmaxPlan p;
  p.isa = &isa();
  int ndim = int(r.integer(1, MAX_DIMS, "ndim"));
  p.dtype = r.dtype("dtype");
  p.lse = int(r.integer(0, 1, "log-sum-exp flag"));
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  if (!read_shape(r, ndim, shape)) return fail(fn, r.error);
  p.in = r.pointer("input pointer");
  if (!read_strides(r, ndim, strides)) return fail(fn, r.error);
  p.out = r.pointer("output pointer");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!is_float(p.dtype)) return unsupported(fn, std::string("softmax of ") + dtype_name(p.dtype));
  p.n = shape[ndim - 1];
  p.last_stride = strides[ndim - 1];
  p.nd = ndim - 1;
  for (int d = 0; d < p.nd; d++) p.shape[d] = shape[d], p.strides[d] = strides[d];
  p.rows = size_of(p.nd, p.shape);
  if (p.rows == 0 || p.n == 0) {
    // log-sum-exp of an empty row is −∞ (the reference's max of nothing)
    if (p.lse && p.n == 0)
      for (int64_t row = 0; row < p.rows; row++) {
        double v = -__builtin_inf();
        if (p.dtype == F64) std::memcpy(p.out + row * 8, &v, 8);
        else {
          float f = float(v);
          float tmp[1] = {f};
          p.isa->store(p.out + row * dtype_size(p.dtype), tmp, p.dtype, 1);
        }
      }
    return MGCPU_OK;
  }
  const int threads = threads_for(double(p.rows) * double(p.n) * 1.5);  // ~ns: max, exp, divide
  note_threads(threads);
  p.rows_per_task = std::max<int64_t>(1, p.rows / (8 * threads));
  parallel_for((p.rows + p.rows_per_task - 1) / p.rows_per_task, threads, softmax_task, &p);
  return MGCPU_OK;
}

}  // namespace

// ---- argmax / argmin ---------------------------------------------------------------------------------

namespace {

struct ArgPlan {
  int dtype, is_max;
  char *in;
  uint32_t *out;
  int nd;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];  // the other dims
  int64_t n, axis_stride, lanes, lanes_per_task;
};

template <class T> bool beats(T a, T b, bool is_max) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return b == b;  // a NaN beats every number and no other NaN
    return is_max ? a > b : a < b;
  } else {
    return is_max ? a > b : a < b;
  }
}

template <class T> uint32_t arg_lane(const T *x, int64_t n, int64_t stride, bool is_max) {
  int64_t best = 0;
  T bv = x[0];
  for (int64_t k = 1; k < n; k++) {
    T v = x[k * stride];
    if (beats(v, bv, is_max)) best = k, bv = v;
  }
  return uint32_t(best);
}

uint32_t arg_lane_c64(const float *x, int64_t n, int64_t stride, bool is_max) {
  auto nan = [&](int64_t i) { return x[2 * i * stride] != x[2 * i * stride] || x[2 * i * stride + 1] != x[2 * i * stride + 1]; };
  auto gt = [&](int64_t i, int64_t j) {
    float ar = x[2 * i * stride], ai = x[2 * i * stride + 1], br = x[2 * j * stride], bi = x[2 * j * stride + 1];
    return ar > br || (ar == br && ai > bi);
  };
  int64_t best = 0;
  for (int64_t k = 1; k < n; k++) {
    bool better = is_max ? gt(k, best) : gt(best, k);
    if (better || (nan(k) && !nan(best))) best = k;
  }
  return uint32_t(best);
}

uint32_t arg_lane_half(const uint16_t *x, int64_t n, int64_t stride, bool is_max, bool bf) {
  int64_t best = 0;
  float bv = bf ? bf16_to_f32(x[0]) : f16_to_f32(x[0]);
  for (int64_t k = 1; k < n; k++) {
    float v = bf ? bf16_to_f32(x[k * stride]) : f16_to_f32(x[k * stride]);
    if (beats(v, bv, is_max)) best = k, bv = v;
  }
  return uint32_t(best);
}

void arg_task(void *ctx, int64_t task, int) {
  const ArgPlan &p = *static_cast<const ArgPlan *>(ctx);
  const int esize = dtype_size(p.dtype);
  const int64_t l0 = task * p.lanes_per_task, l1 = std::min(p.lanes, l0 + p.lanes_per_task);
  for (int64_t lane = l0; lane < l1; lane++) {
    int64_t off = 0, rest = lane;
    for (int d = p.nd - 1; d >= 0; d--) {
      off += (rest % p.shape[d]) * p.strides[d];
      rest /= p.shape[d];
    }
    const char *x = p.in + off * esize;
    const int64_t s = p.axis_stride;
    const bool mx = p.is_max;
    uint32_t r = 0;
    switch (p.dtype) {
      case Bool: case U8: r = arg_lane(reinterpret_cast<const uint8_t *>(x), p.n, s, mx); break;
      case U16: r = arg_lane(reinterpret_cast<const uint16_t *>(x), p.n, s, mx); break;
      case U32: r = arg_lane(reinterpret_cast<const uint32_t *>(x), p.n, s, mx); break;
      case U64: r = arg_lane(reinterpret_cast<const uint64_t *>(x), p.n, s, mx); break;
      case I8: r = arg_lane(reinterpret_cast<const int8_t *>(x), p.n, s, mx); break;
      case I16: r = arg_lane(reinterpret_cast<const int16_t *>(x), p.n, s, mx); break;
      case I32: r = arg_lane(reinterpret_cast<const int32_t *>(x), p.n, s, mx); break;
      case I64: r = arg_lane(reinterpret_cast<const int64_t *>(x), p.n, s, mx); break;
      case F32: r = arg_lane(reinterpret_cast<const float *>(x), p.n, s, mx); break;
      case F64: r = arg_lane(reinterpret_cast<const double *>(x), p.n, s, mx); break;
      case F16: r = arg_lane_half(reinterpret_cast<const uint16_t *>(x), p.n, s, mx, false); break;
      case BF16: r = arg_lane_half(reinterpret_cast<const uint16_t *>(x), p.n, s, mx, true); break;
      case C64: r = arg_lane_c64(reinterpret_cast<const float *>(x), p.n, s, mx); break;
      default: break;
    }
    p.out[lane] = r;
  }
}

int argreduce(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_argreduce";
  Reader r(desc, words, fn);
  ArgPlan p;
  int ndim = int(r.integer(1, MAX_DIMS, "ndim"));
  p.dtype = r.dtype("dtype");
  p.is_max = int(r.integer(0, 1, "argmax flag"));
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  if (!read_shape(r, ndim, shape)) return fail(fn, r.error);
  p.in = r.pointer("input pointer");
  if (!read_strides(r, ndim, strides)) return fail(fn, r.error);
  int axis = int(r.integer(0, ndim - 1, "axis"));
  p.out = reinterpret_cast<uint32_t *>(r.pointer("output pointer"));
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  p.n = shape[axis];
  p.axis_stride = strides[axis];
  p.nd = 0;
  for (int d = 0; d < ndim; d++)
    if (d != axis) p.shape[p.nd] = shape[d], p.strides[p.nd++] = strides[d];
  p.lanes = size_of(p.nd, p.shape);
  if (p.lanes == 0) return MGCPU_OK;
  if (p.n == 0) return unsupported(fn, "an empty axis");
  const int threads = threads_for(double(p.lanes) * double(p.n));
  note_threads(threads);
  p.lanes_per_task = std::max<int64_t>(1, p.lanes / (8 * threads));
  parallel_for((p.lanes + p.lanes_per_task - 1) / p.lanes_per_task, threads, arg_task, &p);
  return MGCPU_OK;
}

}  // namespace

// ---- scans ---------------------------------------------------------------------------------------------

namespace {

enum { SSum = 0, SProd = 1, SMax = 2, SMin = 3, SLogAddExp = 4 };

struct ScanPlan {
  const Isa *isa;
  int dtype, type, reverse, inclusive;
  char *in, *out;
  int nd;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS], ostrides[MAX_DIMS];
  int64_t n, axis_stride, out_axis_stride, lanes, lanes_per_task;
};

double js_logaddexp(double a, double b) {
  if (a != a || b != b) return __builtin_nan("");
  double m = a > b ? a : b;
  if (m == -__builtin_inf()) return -__builtin_inf();
  if (m == __builtin_inf()) return __builtin_inf();
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

template <class T> void scan_int_lane(const ScanPlan &p, const T *x, T *y) {
  using U = std::make_unsigned_t<T>;
  T acc;
  const int64_t n = p.n, s = p.axis_stride, os = p.out_axis_stride;
  switch (p.type) {
    case SSum: acc = 0; break;
    case SProd: acc = 1; break;
    case SMax: acc = std::numeric_limits<T>::min(); break;
    default: acc = std::numeric_limits<T>::max(); break;
  }
  for (int64_t k = 0; k < n; k++) {
    const int64_t i = p.reverse ? n - 1 - k : k;
    const T v = x[i * s];
    T next;
    switch (p.type) {
      case SSum: next = T(U(acc) + U(v)); break;
      case SProd: next = T(std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>(acc) * std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>(v)); break;
      case SMax: next = k == 0 ? v : std::max(acc, v); break;
      default: next = k == 0 ? v : std::min(acc, v); break;
    }
    y[i * os] = p.inclusive ? next : acc;
    acc = next;
  }
}

// float dtypes and bool: the reference's double accumulator, rounded at each store
void scan_double_lane(const ScanPlan &p, const char *x, char *y, double *tin, double *tout) {
  const int64_t n = p.n;
  // widen the lane to double
  float *f = reinterpret_cast<float *>(tout);
  if (p.dtype == F64) {
    for (int64_t k = 0; k < n; k++) tin[k] = reinterpret_cast<const double *>(x)[k * p.axis_stride];
  } else if (p.dtype == Bool) {
    for (int64_t k = 0; k < n; k++) tin[k] = reinterpret_cast<const uint8_t *>(x)[k * p.axis_stride] ? 1 : 0;
  } else {
    p.isa->load(f, x, p.dtype, p.axis_stride, n);
    for (int64_t k = n - 1; k >= 0; k--) tin[k] = double(f[k]);
  }
  double acc;
  switch (p.type) {
    case SSum: acc = 0; break;
    case SProd: acc = 1; break;
    case SMax: acc = p.dtype == Bool ? 0 : -__builtin_inf(); break;
    case SMin: acc = p.dtype == Bool ? 1 : __builtin_inf(); break;
    default: acc = -__builtin_inf(); break;
  }
  for (int64_t k = 0; k < n; k++) {
    const int64_t i = p.reverse ? n - 1 - k : k;
    const double v = tin[i];
    double next;
    switch (p.type) {
      case SSum: next = acc + v; break;
      case SProd: next = acc * v; break;
      case SMax: next = k == 0 ? v : (acc != acc || v != v) ? __builtin_nan("") : v > acc ? v : acc; break;
      case SMin: next = k == 0 ? v : (acc != acc || v != v) ? __builtin_nan("") : v < acc ? v : acc; break;
      default: next = js_logaddexp(acc, v); break;
    }
    tout[i] = p.inclusive ? next : acc;
    acc = next;
  }
  const int64_t os = p.out_axis_stride;
  switch (p.dtype) {
    case F64: for (int64_t k = 0; k < n; k++) reinterpret_cast<double *>(y)[k * os] = tout[k]; break;
    case F32: for (int64_t k = 0; k < n; k++) reinterpret_cast<float *>(y)[k * os] = float(tout[k]); break;
    case F16: for (int64_t k = 0; k < n; k++) reinterpret_cast<uint16_t *>(y)[k * os] = f64_to_f16(tout[k]); break;
    case BF16: for (int64_t k = 0; k < n; k++) reinterpret_cast<uint16_t *>(y)[k * os] = f32_to_bf16(float(tout[k])); break;
    case Bool: for (int64_t k = 0; k < n; k++) reinterpret_cast<uint8_t *>(y)[k * os] = !(tout[k] == 0); break;
    default: break;
  }
}

void scan_c64_lane(const ScanPlan &p, const float *x, float *y) {
  double re = p.type == SProd ? 1 : 0, im = 0;
  const int64_t n = p.n, s = p.axis_stride, os = p.out_axis_stride;
  for (int64_t k = 0; k < n; k++) {
    const int64_t i = p.reverse ? n - 1 - k : k;
    const double xr = x[2 * i * s], xi = x[2 * i * s + 1];
    double nr, ni;
    if (p.type == SSum) nr = re + xr, ni = im + xi;
    else nr = re * xr - im * xi, ni = re * xi + im * xr;
    y[2 * i * os] = float(p.inclusive ? nr : re);
    y[2 * i * os + 1] = float(p.inclusive ? ni : im);
    re = nr, im = ni;
  }
}

void scan_task(void *ctx, int64_t task, int thread) {
  const ScanPlan &p = *static_cast<const ScanPlan *>(ctx);
  const int esize = dtype_size(p.dtype);
  double *tmp = static_cast<double *>(thread_scratch(thread, size_t(p.n) * 16 + 64));
  if (!tmp) return;
  const int64_t l0 = task * p.lanes_per_task, l1 = std::min(p.lanes, l0 + p.lanes_per_task);
  for (int64_t lane = l0; lane < l1; lane++) {
    int64_t off = 0, ooff = 0, rest = lane;
    for (int d = p.nd - 1; d >= 0; d--) {
      const int64_t i = rest % p.shape[d];
      off += i * p.strides[d];
      ooff += i * p.ostrides[d];
      rest /= p.shape[d];
    }
    const char *x = p.in + off * esize;
    char *y = p.out + ooff * esize;
    switch (p.dtype) {
      case U8: scan_int_lane(p, reinterpret_cast<const uint8_t *>(x), reinterpret_cast<uint8_t *>(y)); break;
      case U16: scan_int_lane(p, reinterpret_cast<const uint16_t *>(x), reinterpret_cast<uint16_t *>(y)); break;
      case U32: scan_int_lane(p, reinterpret_cast<const uint32_t *>(x), reinterpret_cast<uint32_t *>(y)); break;
      case U64: scan_int_lane(p, reinterpret_cast<const uint64_t *>(x), reinterpret_cast<uint64_t *>(y)); break;
      case I8: scan_int_lane(p, reinterpret_cast<const int8_t *>(x), reinterpret_cast<int8_t *>(y)); break;
      case I16: scan_int_lane(p, reinterpret_cast<const int16_t *>(x), reinterpret_cast<int16_t *>(y)); break;
      case I32: scan_int_lane(p, reinterpret_cast<const int32_t *>(x), reinterpret_cast<int32_t *>(y)); break;
      case I64: scan_int_lane(p, reinterpret_cast<const int64_t *>(x), reinterpret_cast<int64_t *>(y)); break;
      case C64: scan_c64_lane(p, reinterpret_cast<const float *>(x), reinterpret_cast<float *>(y)); break;
      default: scan_double_lane(p, x, y, tmp, tmp + p.n); break;
    }
  }
}

int scan(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_scan";
  Reader r(desc, words, fn);
  ScanPlan p;
  p.isa = &isa();
  int ndim = int(r.integer(1, MAX_DIMS, "ndim"));
  p.dtype = r.dtype("dtype");
  p.type = int(r.integer(0, 4, "scan type"));
  p.reverse = int(r.integer(0, 1, "reverse"));
  p.inclusive = int(r.integer(0, 1, "inclusive"));
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  if (!read_shape(r, ndim, shape)) return fail(fn, r.error);
  p.in = r.pointer("input pointer");
  if (!read_strides(r, ndim, strides)) return fail(fn, r.error);
  int axis = int(r.integer(0, ndim - 1, "axis"));
  p.out = r.pointer("output pointer");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  // the reference's own limits: integer logaddexp goes through numbers; complex only sums/products
  if (is_int(p.dtype) && p.type == SLogAddExp) return unsupported(fn, "integer logaddexp scan");
  if (p.dtype == C64 && p.type != SSum && p.type != SProd) return unsupported(fn, "complex64 scan");
  int64_t ostr[MAX_DIMS];
  {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
      ostr[d] = s;
      s *= shape[d];
    }
  }
  p.n = shape[axis];
  p.axis_stride = strides[axis];
  p.out_axis_stride = ostr[axis];
  p.nd = 0;
  for (int d = 0; d < ndim; d++)
    if (d != axis) p.shape[p.nd] = shape[d], p.strides[p.nd] = strides[d], p.ostrides[p.nd++] = ostr[d];
  p.lanes = size_of(p.nd, p.shape);
  if (p.lanes == 0 || p.n == 0) return MGCPU_OK;
  const int threads = threads_for(double(p.lanes) * double(p.n) * 2);
  note_threads(threads);
  p.lanes_per_task = std::max<int64_t>(1, p.lanes / (8 * threads));
  parallel_for((p.lanes + p.lanes_per_task - 1) / p.lanes_per_task, threads, scan_task, &p);
  return MGCPU_OK;
}

}  // namespace

// ---- strided copies and fills ------------------------------------------------------------------------

namespace {

struct CopyPlan {
  int ndim, esize;
  int64_t shape[MAX_DIMS], sst[MAX_DIMS], dst_st[MAX_DIMS];
  char *src, *dst;
  int64_t rows, rows_per_task;
};

template <class T> void copy_run(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) {
  T *dp = reinterpret_cast<T *>(d);
  const T *sp = reinterpret_cast<const T *>(s);
  if (ss == 0) {
    const T v = sp[0];
    for (int64_t i = 0; i < n; i++) dp[i * ds] = v;
  } else {
    for (int64_t i = 0; i < n; i++) dp[i * ds] = sp[i * ss];
  }
}

void copy_task(void *ctx, int64_t task, int) {
  const CopyPlan &p = *static_cast<const CopyPlan *>(ctx);
  const int last = p.ndim - 1;
  const int64_t n = p.shape[last];
  const int64_t r0 = task * p.rows_per_task, r1 = std::min(p.rows, r0 + p.rows_per_task);
  for (int64_t r = r0; r < r1; r++) {
    int64_t so = 0, dof = 0, rest = r;
    for (int d = last - 1; d >= 0; d--) {
      const int64_t i = rest % p.shape[d];
      rest /= p.shape[d];
      so += i * p.sst[d];
      dof += i * p.dst_st[d];
    }
    char *d = p.dst + dof * p.esize;
    const char *src = p.src + so * p.esize;
    if (p.sst[last] == 1 && p.dst_st[last] == 1) {
      std::memcpy(d, src, size_t(n) * size_t(p.esize));
      continue;
    }
    switch (p.esize) {
      case 1: copy_run<uint8_t>(d, p.dst_st[last], src, p.sst[last], n); break;
      case 2: copy_run<uint16_t>(d, p.dst_st[last], src, p.sst[last], n); break;
      case 4: copy_run<uint32_t>(d, p.dst_st[last], src, p.sst[last], n); break;
      default: copy_run<uint64_t>(d, p.dst_st[last], src, p.sst[last], n); break;
    }
  }
}

// [ndim, element bytes (1, 2, 4, 8), shape…, src, src strides…, dst, dst strides…]: dst[i] = src[i]
// over the shape, bit for bit (a zero source stride broadcasts: fills).
int copy(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_copy";
  Reader r(desc, words, fn);
  CopyPlan p;
  p.ndim = int(r.integer(0, MAX_DIMS, "ndim"));
  p.esize = int(r.integer(1, 8, "element size"));
  if (!read_shape(r, p.ndim, p.shape)) return fail(fn, r.error);
  p.src = r.pointer("source");
  if (!read_strides(r, p.ndim, p.sst)) return fail(fn, r.error);
  p.dst = r.pointer("destination");
  if (!read_strides(r, p.ndim, p.dst_st)) return fail(fn, r.error);
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (p.esize != 1 && p.esize != 2 && p.esize != 4 && p.esize != 8) return fail(fn, "element size must be 1, 2, 4 or 8");
  if (size_of(p.ndim, p.shape) == 0) return MGCPU_OK;
  int64_t *st[2] = {p.sst, p.dst_st};
  p.ndim = collapse(p.ndim, p.shape, 2, st);
  if (p.ndim == 0) {
    p.ndim = 1;
    p.shape[0] = 1;
    p.sst[0] = p.dst_st[0] = 0;
  }
  p.rows = size_of(p.ndim - 1, p.shape);
  const double bytes = double(p.rows) * double(p.shape[p.ndim - 1]) * p.esize;
  const int threads = threads_for(bytes * 0.1);  // ~0.1 ns a byte
  note_threads(threads);
  p.rows_per_task = std::max<int64_t>(1, p.rows / (8 * threads));
  parallel_for((p.rows + p.rows_per_task - 1) / p.rows_per_task, threads, copy_task, &p);
  return MGCPU_OK;
}

// [dtype, n, start, step, dst]: dst[i] = start + i·step computed in float64, stored with the
// reference's rounding (writeNumbers).
int arange(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_arange";
  Reader r(desc, words, fn);
  const int dt = r.dtype("dtype");
  const int64_t n = r.integer(0, int64_t(1) << 52, "count");
  const double start = r.next(), step = r.next();
  char *dst = r.pointer("destination");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  // Integral start and step whose values all fit int32 (index arrays, e.g. a strided view's
  // gradient): every value is an exact integer, so int32 conversion is the wrap below.
  const double last = start + double(std::max<int64_t>(n - 1, 0)) * step;
  if (dt == I32 && start == std::floor(start) && step == std::floor(step) && std::fabs(start) < 2147483648.0 &&
      std::fabs(last) < 2147483648.0) {
    int32_t *out = reinterpret_cast<int32_t *>(dst);
    for (int64_t i = 0; i < n; i++) out[i] = int32_t(start + double(i) * step);
    return MGCPU_OK;
  }
  if (dt == F32) {
    float *out = reinterpret_cast<float *>(dst);
    for (int64_t i = 0; i < n; i++) out[i] = float(start + double(i) * step);
    return MGCPU_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    const double v = start + double(i) * step;
    switch (dt) {
      case Bool: reinterpret_cast<uint8_t *>(dst)[i] = !(v == 0); break;
      case F32: reinterpret_cast<float *>(dst)[i] = float(v); break;
      case F64: reinterpret_cast<double *>(dst)[i] = v; break;
      case F16: reinterpret_cast<uint16_t *>(dst)[i] = f64_to_f16(v); break;
      case BF16: reinterpret_cast<uint16_t *>(dst)[i] = f32_to_bf16(float(v)); break;
      case C64: reinterpret_cast<float *>(dst)[2 * i] = float(v), reinterpret_cast<float *>(dst)[2 * i + 1] = 0; break;
      default: {
        const uint64_t u = wrap_u64_from_double(v);
        std::memcpy(dst + i * dtype_size(dt), &u, size_t(dtype_size(dt)));  // little-endian: low bytes
      }
    }
  }
  return MGCPU_OK;
}

}  // namespace

// ---- random bits ------------------------------------------------------------------------------------------

namespace {

struct RandomPlan {
  const Isa *isa;
  const double *keys;  // k0, k1 per key, from the descriptor
  int64_t num_keys, bytes_per_key, pairs, pairs_per_task, tasks_per_key;
  uint8_t *out;
};

void random_task(void *ctx, int64_t task, int) {
  const RandomPlan &p = *static_cast<const RandomPlan *>(ctx);
  const int64_t key = task / p.tasks_per_key;
  const int64_t i0 = (task % p.tasks_per_key) * p.pairs_per_task;
  const int64_t i1 = std::min(p.pairs, i0 + p.pairs_per_task);
  p.isa->random_bits(uint32_t(p.keys[2 * key]), uint32_t(p.keys[2 * key + 1]), p.bytes_per_key, i0, i1,
                     p.out + key * p.bytes_per_key);
}

// [number of keys, bytes per key, out, (k0, k1) per key]: each key's Threefry-2x32 stream bytes
int random_bits(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_random_bits";
  Reader r(desc, words, fn);
  RandomPlan p;
  p.isa = &isa();
  p.num_keys = r.integer(0, int64_t(1) << 40, "key count");
  p.bytes_per_key = r.integer(0, int64_t(1) << 40, "bytes per key");
  p.out = reinterpret_cast<uint8_t *>(r.pointer("output"));
  if (!r.ok) return fail(fn, r.error);
  if (words - r.pos != 2 * p.num_keys) return fail(fn, "descriptor must end with two key words per key");
  for (int64_t k = 0; k < 2 * p.num_keys; k++) r.integer(0, 0xffffffffll, "key word");
  if (!r.ok) return fail(fn, r.error);
  p.keys = desc + 3;
  if (p.num_keys == 0 || p.bytes_per_key == 0) return MGCPU_OK;
  const int64_t words_per_key = (p.bytes_per_key + 3) / 4;
  if (words_per_key > 0xffffffffll) return unsupported(fn, "a stream longer than 2^32 words");
  p.pairs = words_per_key / 2;
  p.pairs_per_task = std::max<int64_t>(1, std::min<int64_t>(p.pairs, 1 << 14));
  p.tasks_per_key = std::max<int64_t>(1, (p.pairs + p.pairs_per_task - 1) / p.pairs_per_task);
  const int threads = threads_for(double(p.num_keys) * double(words_per_key) * 1.0);
  note_threads(threads);
  parallel_for(p.num_keys * p.tasks_per_key, threads, random_task, &p);
  return MGCPU_OK;
}

}  // namespace

// ---- gathers ---------------------------------------------------------------------------------------------

namespace {

// An index value as an int64 (integer and bool dtypes); false for other dtypes.
bool read_index(const char *base, int dtype, int64_t off, int64_t *v) {
  switch (dtype) {
    case Bool: case U8: *v = reinterpret_cast<const uint8_t *>(base)[off]; return true;
    case U16: *v = reinterpret_cast<const uint16_t *>(base)[off]; return true;
    case U32: *v = reinterpret_cast<const uint32_t *>(base)[off]; return true;
    case U64: {
      const uint64_t u = reinterpret_cast<const uint64_t *>(base)[off];
      *v = u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);
      return true;
    }
    case I8: *v = reinterpret_cast<const int8_t *>(base)[off]; return true;
    case I16: *v = reinterpret_cast<const int16_t *>(base)[off]; return true;
    case I32: *v = reinterpret_cast<const int32_t *>(base)[off]; return true;
    case I64: *v = reinterpret_cast<const int64_t *>(base)[off]; return true;
    default: return false;
  }
}

void copy_elem(char *dst, const char *src, int esize) {
  switch (esize) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    default: std::memcpy(dst, src, 8); break;
  }
}

// Gather: out[i, s…] = src[start(i) + s], start(i)_axes[k] = wrap(indices_k[i]). An index outside
// [0, n − slice] makes the call unsupported: the reference then zero-fills or throws, as configured.
int gather(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_gather";
  Reader r(desc, words, fn);
  const int nd = int(r.integer(0, MAX_DIMS, "source ndim"));
  const int esize = int(r.integer(1, 8, "element size"));
  int64_t shape[MAX_DIMS], sst[MAX_DIMS];
  if (!read_shape(r, nd, shape)) return fail(fn, r.error);
  const char *src = r.pointer("source");
  if (!read_strides(r, nd, sst)) return fail(fn, r.error);
  const int nidx = int(r.integer(0, nd, "index array count"));
  const int ind = int(r.integer(0, MAX_DIMS, "index ndim"));
  int64_t ishape[MAX_DIMS];
  if (!read_shape(r, ind, ishape)) return fail(fn, r.error);
  const char *iptr[MAX_DIMS];
  int idt[MAX_DIMS];
  int64_t ist[MAX_DIMS][MAX_DIMS];
  for (int k = 0; k < nidx; k++) {
    iptr[k] = r.pointer("index pointer");
    idt[k] = r.dtype("index dtype");
    if (!read_strides(r, ind, ist[k])) return fail(fn, r.error);
  }
  int axes[MAX_DIMS];
  for (int k = 0; k < nidx; k++) axes[k] = int(r.integer(0, std::max(0, nd - 1), "axis"));
  int64_t slice[MAX_DIMS];
  for (int d = 0; d < nd; d++) slice[d] = r.integer(0, int64_t(1) << 52, "slice size");
  char *out = r.pointer("output");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  for (int k = 0; k < nidx; k++)
    if (!is_int(idt[k]) && idt[k] != Bool) return unsupported(fn, std::string("indices of ") + dtype_name(idt[k]));
  const int64_t nI = nidx > 0 ? size_of(ind, ishape) : 1;
  const int64_t sliceN = size_of(nd, slice);
  if (nI == 0 || sliceN == 0) return MGCPU_OK;
  // the slice as rows of its innermost dimension
  const int last = nd - 1;
  for (int64_t i = 0; i < nI; i++) {
    int64_t base = 0;
    for (int k = 0; k < nidx; k++) {
      int64_t off = 0, rest = i;
      for (int d = ind - 1; d >= 0; d--) {
        off += (rest % ishape[d]) * ist[k][d];
        rest /= ishape[d];
      }
      int64_t v;
      read_index(iptr[k], idt[k], off, &v);
      const int ax = axes[k];
      if (v < 0) v += shape[ax];
      if (v < 0 || v > shape[ax] - slice[ax]) return unsupported(fn, "an index out of range");
      base += v * sst[ax];
    }
    char *o = out + i * sliceN * esize;
    if (nd == 0) {
      copy_elem(o, src + base * esize, esize);
      continue;
    }
    const int64_t rows = sliceN / slice[last];
    for (int64_t rw = 0; rw < rows; rw++) {
      int64_t off = base, rest = rw;
      for (int d = last - 1; d >= 0; d--) {
        off += (rest % slice[d]) * sst[d];
        rest /= slice[d];
      }
      const char *s = src + off * esize;
      if (sst[last] == 1) {
        std::memcpy(o, s, size_t(slice[last]) * size_t(esize));
      } else {
        for (int64_t j = 0; j < slice[last]; j++) copy_elem(o + j * esize, s + j * sst[last] * esize, esize);
      }
      o += slice[last] * esize;
    }
  }
  return MGCPU_OK;
}

// GatherAxis (take_along_axis): out[…, j, …] = src[…, wrap(idx[…, j, …]), …] over the index shape.
int gather_axis(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_gather_axis";
  Reader r(desc, words, fn);
  const int nd = int(r.integer(1, MAX_DIMS, "ndim"));
  const int esize = int(r.integer(1, 8, "element size"));
  int64_t shape[MAX_DIMS], sst[MAX_DIMS], ist[MAX_DIMS];
  if (!read_shape(r, nd, shape)) return fail(fn, r.error);
  const char *src = r.pointer("source");
  if (!read_strides(r, nd, sst)) return fail(fn, r.error);
  const int axis = int(r.integer(0, nd - 1, "axis"));
  const int64_t n = r.integer(0, int64_t(1) << 52, "axis size");
  const char *idx = r.pointer("indices");
  const int idt = r.dtype("index dtype");
  if (!read_strides(r, nd, ist)) return fail(fn, r.error);
  char *out = r.pointer("output");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  const int64_t total = size_of(nd, shape);
  if (total == 0) return MGCPU_OK;
  if (!is_int(idt) && idt != Bool) return unsupported(fn, std::string("indices of ") + dtype_name(idt));
  int64_t c[MAX_DIMS] = {0};
  int64_t soff = 0, ioff = 0;
  for (int64_t i = 0; i < total; i++) {
    int64_t v;
    read_index(idx, idt, ioff, &v);
    if (v < 0) v += n;
    if (v < 0 || v >= n) return unsupported(fn, "an index out of range");
    copy_elem(out + i * esize, src + (soff + v * sst[axis]) * esize, esize);
    for (int d = nd - 1; d >= 0; d--) {
      c[d]++;
      if (d != axis) soff += sst[d];
      ioff += ist[d];
      if (c[d] < shape[d]) break;
      if (d != axis) soff -= shape[d] * sst[d];
      ioff -= shape[d] * ist[d];
      c[d] = 0;
    }
  }
  return MGCPU_OK;
}

}  // namespace

int matmul(const double *desc, int32_t words);  // gemm.cpp
int gemm_provider();
int set_gemm_provider(int provider);
int last_gemm();
const char *blas_name();

}  // namespace mgcpu

// ---- C ABI -------------------------------------------------------------------------------------------------

using namespace mgcpu;

MG_EXPORT const char *mg_cpu_last_error(void) { return last_error.c_str(); }

MG_EXPORT const char *mg_cpu_info_json(void) {
  static thread_local std::string json;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"isa\":\"%s\",\"threads\":%d,\"gemm\":\"%s\",\"blas\":\"%s\",\"tile\":%lld}",
                isa().name, thread_count(), gemm_provider() == 1 ? "blas" : "metalgrad", blas_name(),
                static_cast<long long>(TILE));
  json = buf;
  return json.c_str();
}

MG_EXPORT int32_t mg_cpu_set_threads(int32_t threads) { return set_thread_count(threads); }

MG_EXPORT int32_t mg_cpu_set_isa(int32_t which) {
  if (which == 1) current_isa.store(&isa_baseline(), std::memory_order_release);
#if defined(__x86_64__)
  else if (which == 2 && cpu_has_avx2_fma()) current_isa.store(&isa_avx2(), std::memory_order_release);
  else if (which == 3 && cpu_has_avx512()) current_isa.store(&isa_avx512(), std::memory_order_release);
#endif
  else if (which == 0) current_isa.store(best_isa(), std::memory_order_release);
  const Isa *now = &isa();
#if defined(__x86_64__)
  if (now == &isa_avx512()) return 3;
#endif
  return now == &isa_baseline() ? 1 : 2;
}

MG_EXPORT int32_t mg_cpu_set_gemm(int32_t provider) { return set_gemm_provider(provider); }

MG_EXPORT int32_t mg_cpu_last_run(double *out, int32_t n) {
  if (!out) return fail("mg_cpu_last_run", "null output");
  if (n > 0) out[0] = last_gemm();
  if (n > 1) out[1] = last_threads.load(std::memory_order_relaxed);
  return MGCPU_OK;
}

MG_EXPORT int32_t mg_cpu_elementwise(const double *desc, int32_t words) { return elementwise(desc, words); }
MG_EXPORT int32_t mg_cpu_reduce(const double *desc, int32_t words) { return reduce(desc, words); }
MG_EXPORT int32_t mg_cpu_argreduce(const double *desc, int32_t words) { return argreduce(desc, words); }
MG_EXPORT int32_t mg_cpu_softmax(const double *desc, int32_t words) { return softmax(desc, words); }
MG_EXPORT int32_t mg_cpu_matmul(const double *desc, int32_t words) { return matmul(desc, words); }
MG_EXPORT int32_t mg_cpu_scan(const double *desc, int32_t words) { return scan(desc, words); }
MG_EXPORT int32_t mg_cpu_copy(const double *desc, int32_t words) { return copy(desc, words); }
MG_EXPORT int32_t mg_cpu_arange(const double *desc, int32_t words) { return arange(desc, words); }
MG_EXPORT int32_t mg_cpu_random_bits(const double *desc, int32_t words) { return random_bits(desc, words); }
MG_EXPORT int32_t mg_cpu_gather(const double *desc, int32_t words) { return gather(desc, words); }
MG_EXPORT int32_t mg_cpu_gather_axis(const double *desc, int32_t words) { return gather_axis(desc, words); }
