// The guide's §8.2 grid_sample forward and §9.4 backward (simd_sum before atomics, outputs
// initialised to 0 as init_value=0 does), against float64 references computed here. The bodies are
// read from test/fixtures/guide-kernels and wrapped in the signature metal_kernel generates.
#include "harness.h"


// §8.2's corner loads are unconditional and its bounds checks are selects after them; the guide's
// note 3 assumes the loads' addresses stay inside `x`, which they do not at the border. The loads
// stay unconditional, but each address is clamped into the buffer (the selects still zero what
// lies outside the image). Sets *loads to the number rewritten (4 for the guide's body).
// A line's `T I_<nw|ne|sw|se> = x[<index>];` (index: up to the line's last "];") becomes
// `T I_.. = x[clamp(<index>, 0, last)];` (string search: <regex> was 2 of the harness's CPU s).
static std::string clamp_corner_loads(const std::string &body, int *loads) {
  std::string out;
  *loads = 0;
  for (size_t pos = 0; pos < body.size();) {
    size_t eol = body.find('\n', pos);
    eol = eol == std::string::npos ? body.size() : eol + 1;
    std::string line = body.substr(pos, eol - pos);
    pos = eol;
    for (size_t from = 0;;) {
      size_t at = line.find("T I_", from);
      if (at == std::string::npos) break;
      const std::string corner = line.substr(at + 4, 2);
      const size_t index = at + 6 + 5;  // after "T I_xx = x["
      const size_t close = line.rfind("];");
      if ((corner != "nw" && corner != "ne" && corner != "sw" && corner != "se") ||
          line.compare(at + 6, 5, " = x[") != 0 || close == std::string::npos || close < index) {
        from = at + 1;
        continue;
      }
      const std::string clamped = "clamp(" + line.substr(index, close - index) + ", 0, last)";
      line.replace(index, close - index, clamped);
      ++*loads;
      from = index + clamped.size() + 2;
    }
    out += line;
  }
  size_t first = out.find("T I_nw = x[");
  if (first != std::string::npos) out.insert(first, "int last = x_shape[0] * b_stride - 1;\n    ");
  return out;
}

static std::string forward_source(int *loads) {
  return metal_kernel_source(
      "custom_kernel_grid_sample_float",
      {"const device T* x [[buffer(0)]]", "const constant int* x_shape [[buffer(1)]]",
       "const device T* grid [[buffer(2)]]", "const constant int* grid_shape [[buffer(3)]]",
       "device T* out [[buffer(4)]]", "uint3 thread_position_in_grid [[thread_position_in_grid]]"},
      clamp_corner_loads(guide_kernel("grid_sample"), loads));
}

// ceildiv comes from MLX's utils.h in metal_kernel; a stand-in for the test.
static const char *kUtils = "inline int ceildiv(int a, int b) { return (a + b - 1) / b; }\n";

static std::string backward_source() {
  return metal_kernel_source(
      "custom_kernel_grid_sample_grad_float",
      {"const device T* x [[buffer(0)]]", "const constant int* x_shape [[buffer(1)]]",
       "const device T* grid [[buffer(2)]]", "const constant int* grid_shape [[buffer(3)]]",
       "const device T* cotangent [[buffer(4)]]", "device atomic<float>* x_grad [[buffer(5)]]",
       "device atomic<float>* grid_grad [[buffer(6)]]",
       "uint3 thread_position_in_grid [[thread_position_in_grid]]",
       "uint threads_per_simdgroup [[threads_per_simdgroup]]",
       "uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]"},
      guide_kernel("grid_sample_vjp"), kUtils);
}

struct Problem {
  int B = 2, H = 5, W = 7, C = 3, gH = 4, gW = 6;
  std::vector<float> x, grid, cot;
  Problem() {
    x = randf(size_t(B * H * W * C), 21);
    grid = randf(size_t(B * gH * gW * 2), 22);
    for (auto &g : grid) g *= 1.15f;  // some samples fall outside: zero padding
    cot = randf(size_t(B * gH * gW * C), 23);
  }
  // The sampling weights and corner indices, in double, following the reference definition.
  template <class F>
  void each(F f) const {
    for (int b = 0; b < B; ++b)
      for (int gy = 0; gy < gH; ++gy)
        for (int gx = 0; gx < gW; ++gx) {
          size_t gi = size_t(((b * gH + gy) * gW + gx) * 2);
          double ix = ((double(grid[gi]) + 1) * W - 1) / 2, iy = ((double(grid[gi + 1]) + 1) * H - 1) / 2;
          int x0 = int(std::floor(ix)), y0 = int(std::floor(iy));
          struct Corner { int xx, yy; double w, dwx, dwy; } cs[4] = {
              {x0, y0, (x0 + 1 - ix) * (y0 + 1 - iy), -(y0 + 1 - iy), -(x0 + 1 - ix)},
              {x0 + 1, y0, (ix - x0) * (y0 + 1 - iy), (y0 + 1 - iy), -(ix - x0)},
              {x0, y0 + 1, (x0 + 1 - ix) * (iy - y0), -(iy - y0), (x0 + 1 - ix)},
              {x0 + 1, y0 + 1, (ix - x0) * (iy - y0), (iy - y0), (ix - x0)}};
          f(b, gy, gx, gi, cs);
        }
  }
};

int main() {
  Problem p;
  {
    int loads = 0;
    Lib lib(forward_source(&loads));
    CHECK(loads == 4, "grid_sample forward: the guide's 4 corner loads clamped (found %d)", loads);
    CHECK(lib.lib, "grid_sample forward compiles %s", lib.error.c_str());
    if (lib.lib) {
      auto *f = lib.fn("custom_kernel_grid_sample_float");
      std::vector<int> xs = {p.B, p.H, p.W, p.C}, gs = {p.B, p.gH, p.gW, 2};
      size_t n = size_t(p.B * p.gH * p.gW * p.C);
      std::vector<float> out(n, -9);
      std::string e = Dispatch(f).buf(0, p.x).buf(1, xs).buf(2, p.grid).buf(3, gs).buf(4, out)
                          .threads(uint32_t(n), 1, 1, 256, 1, 1).run();
      double worst = 0;
      p.each([&](int b, int gy, int gx, size_t, auto &cs) {
        for (int c = 0; c < p.C; ++c) {
          double want = 0;
          for (auto &k : cs)
            if (k.xx >= 0 && k.xx < p.W && k.yy >= 0 && k.yy < p.H)
              want += k.w * p.x[size_t(((b * p.H + k.yy) * p.W + k.xx) * p.C + c)];
          worst = std::max(worst, std::fabs(out[size_t(((b * p.gH + gy) * p.gW + gx) * p.C + c)] - want));
        }
      });
      CHECK(e.empty() && worst < 1e-5, "grid_sample forward (2,5,7,3) x (2,4,6,2): max abs err %.3g %s", worst, e.c_str());
      mgsim_function_release(f);
    }
  }
  for (int checked = 0; checked <= 1; ++checked) {
    // Checked mode also exercises the atomics' mgsim_resolve() hook on checked pointers.
    Lib lib(backward_source(), checked);
    CHECK(lib.lib, "grid_sample backward (atomics%s) compiles %s", checked ? ", checked mode" : "", lib.error.c_str());
    if (lib.lib) {
      auto *f = lib.fn("custom_kernel_grid_sample_grad_float");
      std::vector<int> xs = {p.B, p.H, p.W, p.C}, gs = {p.B, p.gH, p.gW, 2};
      std::vector<float> xg(p.x.size(), 0.0f), gg(p.grid.size(), 0.0f);  // init_value = 0
      uint32_t n = uint32_t(p.B * p.gH * p.gW * 32);
      Dispatch d(f);
      d.buf(0, p.x).buf(1, xs).buf(2, p.grid).buf(3, gs).buf(4, p.cot).buf(5, xg).buf(6, gg).threads(n, 1, 1, 256, 1, 1);
      std::string e = d.run();
      std::vector<double> rx(p.x.size(), 0), rg(p.grid.size(), 0);
      p.each([&](int b, int gy, int gx, size_t gi, auto &cs) {
        for (int c = 0; c < p.C; ++c) {
          double cot = p.cot[size_t(((b * p.gH + gy) * p.gW + gx) * p.C + c)];
          for (auto &k : cs) {
            if (!(k.xx >= 0 && k.xx < p.W && k.yy >= 0 && k.yy < p.H)) continue;
            size_t off = size_t(((b * p.H + k.yy) * p.W + k.xx) * p.C + c);
            rx[off] += k.w * cot;
            rg[gi] += p.x[off] * k.dwx * cot * double(p.W / 2);
            rg[gi + 1] += p.x[off] * k.dwy * cot * double(p.H / 2);
          }
        }
      });
      double wx = 0, wg = 0;
      for (size_t i = 0; i < rx.size(); ++i) wx = std::max(wx, std::fabs(xg[i] - rx[i]));
      for (size_t i = 0; i < rg.size(); ++i) wg = std::max(wg, std::fabs(gg[i] - rg[i]));
      CHECK(e.empty() && wx < 1e-5 && wg < 1e-4, "grid_sample backward%s: x_grad max err %.3g, grid_grad max err %.3g %s", checked ? " (checked)" : "", wx, wg, e.c_str());
      mgsim_function_release(f);
    }
  }
  return finish();
}
