// The guide's §8.2 grid_sample forward and §9.4 backward (simd_sum before atomics, outputs
// initialised to 0 as init_value=0 does), against float64 references computed here.
#include "harness.h"


static const char *kForward = R"(
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void custom_kernel_grid_sample_float(
    const device T* x [[buffer(0)]], const constant int* x_shape [[buffer(1)]],
    const device T* grid [[buffer(2)]], const constant int* grid_shape [[buffer(3)]],
    device T* out [[buffer(4)]], uint3 thread_position_in_grid [[thread_position_in_grid]]) {
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C / gH / gW * b_stride;
    int channel_idx = elem % C;
    int base_idx = batch_idx + channel_idx;

    // Bounds checks are selects after unconditional loads (as in the guide); clamp the address
    // so the load itself stays inside the buffer, which the guide's caller guarantees.
    int last = x_shape[0] * b_stride - 1;
    T I_nw = x[clamp(base_idx + iy_nw * h_stride + ix_nw * w_stride, 0, last)];
    T I_ne = x[clamp(base_idx + iy_ne * h_stride + ix_ne * w_stride, 0, last)];
    T I_sw = x[clamp(base_idx + iy_sw * h_stride + ix_sw * w_stride, 0, last)];
    T I_se = x[clamp(base_idx + iy_se * h_stride + ix_se * w_stride, 0, last)];

    I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? I_nw : 0;
    I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? I_ne : 0;
    I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? I_sw : 0;
    I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? I_se : 0;

    out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
}
template [[host_name("custom_kernel_grid_sample_float")]] [[kernel]]
decltype(custom_kernel_grid_sample_float<float>) custom_kernel_grid_sample_float<float>;
)";

static const char *kBackward = R"(
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void custom_kernel_grid_sample_grad_float(
    const device T* x [[buffer(0)]], const constant int* x_shape [[buffer(1)]],
    const device T* grid [[buffer(2)]], const constant int* grid_shape [[buffer(3)]],
    const device T* cotangent [[buffer(4)]],
    device atomic<float>* x_grad [[buffer(5)]], device atomic<float>* grid_grad [[buffer(6)]],
    uint3 thread_position_in_grid [[thread_position_in_grid]],
    uint threads_per_simdgroup [[threads_per_simdgroup]],
    uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]) {
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    // Pad C to the nearest larger simdgroup size multiple
    int C_padded = ceildiv(C, threads_per_simdgroup) * threads_per_simdgroup;

    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C_padded * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C_padded / gH / gW * b_stride;
    int channel_idx = elem % C_padded;
    int base_idx = batch_idx + channel_idx;

    T gix = T(0);
    T giy = T(0);
    if (channel_idx < C) {
        int cot_index = elem / C_padded * C + channel_idx;
        T cot = cotangent[cot_index];
        if (iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1) {
            int offset = base_idx + iy_nw * h_stride + ix_nw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], nw * cot, memory_order_relaxed);

            T I_nw = x[offset];
            gix -= I_nw * (iy_se - iy) * cot;
            giy -= I_nw * (ix_se - ix) * cot;
        }
        if (iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1) {
            int offset = base_idx + iy_ne * h_stride + ix_ne * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], ne * cot, memory_order_relaxed);

            T I_ne = x[offset];
            gix += I_ne * (iy_sw - iy) * cot;
            giy -= I_ne * (ix - ix_sw) * cot;
        }
        if (iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1) {
            int offset = base_idx + iy_sw * h_stride + ix_sw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], sw * cot, memory_order_relaxed);

            T I_sw = x[offset];
            gix -= I_sw * (iy - iy_ne) * cot;
            giy += I_sw * (ix_ne - ix) * cot;
        }
        if (iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1) {
            int offset = base_idx + iy_se * h_stride + ix_se * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], se * cot, memory_order_relaxed);

            T I_se = x[offset];
            gix += I_se * (iy - iy_nw) * cot;
            giy += I_se * (ix - ix_nw) * cot;
        }
    }

    T gix_mult = W / 2;
    T giy_mult = H / 2;

    // Reduce across each simdgroup first.
    // This is much faster than relying purely on atomics.
    gix = simd_sum(gix);
    giy = simd_sum(giy);

    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[grid_idx], gix * gix_mult, memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[grid_idx + 1], giy * giy_mult, memory_order_relaxed);
    }
}
template [[host_name("custom_kernel_grid_sample_grad_float")]] [[kernel]]
decltype(custom_kernel_grid_sample_grad_float<float>) custom_kernel_grid_sample_grad_float<float>;
)";

// ceildiv comes from MLX's utils.h in metal_kernel; a stand-in for the test.
static const char *kUtils = "\ninline int ceildiv(int a, int b) { return (a + b - 1) / b; }\n";

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
    Lib lib(kForward);
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
    Lib lib(std::string(kUtils) + kBackward, checked);
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
