// The guide's bilinear grid_sample (§8.2 forward, §9.4 backward) as mg.fast.metalKernel sources,
// and independent float64 references computed here in plain TypeScript (the forward as MLX's
// grid_sample_ref computes it, the backward derived by hand from the same bilinear weights). The
// kernel bodies themselves are the guide's, read from test/fixtures/guide-kernels.
import { guideKernel } from "../fixtures/guide-kernels.ts";

/** §8.2's kernel body, verbatim. Its corner loads are unconditional: at the image border they
 *  address memory outside `x` (the guide's note 3 assumes they stay in bounds; they do not). */
export const GRID_SAMPLE_SOURCE = guideKernel("grid_sample");

/** §8.2 with each corner load behind its bounds test (the `? :` evaluates only the chosen side),
 *  so samples near the border never address memory outside `x`. Otherwise identical. */
export const GRID_SAMPLE_SAFE_SOURCE = GRID_SAMPLE_SOURCE.replace(
  /T I_(nw|ne|sw|se) = x\[base_idx \+ iy_\1 \* h_stride \+ ix_\1 \* w_stride\];\n/g,
  "",
).replace(
  /I_(nw|ne|sw|se) = (iy_\1 >= 0 && iy_\1 <= H - 1 && ix_\1 >= 0 && ix_\1 <= W - 1) \? I_\1 : 0;/g,
  "T I_$1 = $2 ? x[base_idx + iy_$1 * h_stride + ix_$1 * w_stride] : T(0);",
);

/** §9.4's backward kernel body, verbatim (simd_sum before the atomics, C padded to the simd width). */
export const GRID_SAMPLE_VJP_SOURCE = guideKernel("grid_sample_vjp");

/** §9.4 with d ix / d grid = W / 2 computed in floating point: the verbatim `T gix_mult = W / 2;`
 *  divides integers, which is exact only for even W and H. */
export const GRID_SAMPLE_VJP_FIXED_SOURCE = GRID_SAMPLE_VJP_SOURCE.replace("T gix_mult = W / 2;", "T gix_mult = T(W) / 2;").replace(
  "T giy_mult = H / 2;",
  "T giy_mult = T(H) / 2;",
);

export interface Dims {
  N: number;
  H: number;
  W: number;
  C: number;
  gH: number;
  gW: number;
}

interface Corner {
  y: number;
  x: number;
  w: number;
  /** ∂w/∂ix and ∂w/∂iy */
  dwx: number;
  dwy: number;
}

/** The four bilinear corners of a sample point (MLX's grid_sample_ref conventions). */
function corners(gx: number, gy: number, H: number, W: number): { corners: Corner[] } {
  const ix = ((gx + 1) * W - 1) / 2;
  const iy = ((gy + 1) * H - 1) / 2;
  const x0 = Math.floor(ix);
  const y0 = Math.floor(iy);
  const fx = ix - x0;
  const fy = iy - y0;
  return {
    corners: [
      { y: y0, x: x0, w: (1 - fx) * (1 - fy), dwx: -(1 - fy), dwy: -(1 - fx) },
      { y: y0, x: x0 + 1, w: fx * (1 - fy), dwx: 1 - fy, dwy: -fx },
      { y: y0 + 1, x: x0, w: (1 - fx) * fy, dwx: -fy, dwy: 1 - fx },
      { y: y0 + 1, x: x0 + 1, w: fx * fy, dwx: fy, dwy: fx },
    ],
  };
}

/** Forward in float64: out[n, i, j, c] = Σ corners w · x[n, y, x, c] (zero outside the image). */
export function gridSampleReference(x: ArrayLike<number>, grid: ArrayLike<number>, d: Dims): Float64Array {
  const { N, H, W, C, gH, gW } = d;
  const out = new Float64Array(N * gH * gW * C);
  for (let n = 0; n < N; n++) {
    for (let i = 0; i < gH; i++) {
      for (let j = 0; j < gW; j++) {
        const g = ((n * gH + i) * gW + j) * 2;
        const { corners: cs } = corners(grid[g]!, grid[g + 1]!, H, W);
        for (let c = 0; c < C; c++) {
          let acc = 0;
          for (const k of cs) {
            if (k.y >= 0 && k.y < H && k.x >= 0 && k.x < W) acc += k.w * x[((n * H + k.y) * W + k.x) * C + c]!;
          }
          out[((n * gH + i) * gW + j) * C + c] = acc;
        }
      }
    }
  }
  return out;
}

/** Backward in float64: the cotangents of x and grid for a cotangent of the output. */
export function gridSampleVjpReference(
  x: ArrayLike<number>,
  grid: ArrayLike<number>,
  cot: ArrayLike<number>,
  d: Dims,
): { xGrad: Float64Array; gridGrad: Float64Array } {
  const { N, H, W, C, gH, gW } = d;
  const xGrad = new Float64Array(N * H * W * C);
  const gridGrad = new Float64Array(N * gH * gW * 2);
  for (let n = 0; n < N; n++) {
    for (let i = 0; i < gH; i++) {
      for (let j = 0; j < gW; j++) {
        const g = ((n * gH + i) * gW + j) * 2;
        const { corners: cs } = corners(grid[g]!, grid[g + 1]!, H, W);
        let gix = 0;
        let giy = 0;
        for (let c = 0; c < C; c++) {
          const ct = cot[((n * gH + i) * gW + j) * C + c]!;
          for (const k of cs) {
            if (!(k.y >= 0 && k.y < H && k.x >= 0 && k.x < W)) continue;
            const at = ((n * H + k.y) * W + k.x) * C + c;
            xGrad[at]! += k.w * ct;
            gix += k.dwx * x[at]! * ct;
            giy += k.dwy * x[at]! * ct;
          }
        }
        // ix = ((gx + 1) W − 1) / 2, so ∂ix/∂gx = W / 2 (and ∂iy/∂gy = H / 2).
        gridGrad[g] = (gix * W) / 2;
        gridGrad[g + 1] = (giy * H) / 2;
      }
    }
  }
  return { xGrad, gridGrad };
}
