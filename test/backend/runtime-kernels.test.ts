// End to end: TypeScript → FFI → Swift runtime → Metal (or the shim → MSL simulator). The kernels
// are the guide's §8.1 `myexp` and §8.3 `rownorm` (bodies from test/fixtures/guide-kernels), with
// the full signature MLX's metal_kernel generates for them (§7.3) written out here, and checked
// against float64 references computed here.
import { describe, expect, test } from "bun:test";
import { runtime, type NativeBuffer } from "../../ts/backend/runtime.ts";
import { mulberry32 } from "../../ts/testing/rng.ts";
import { guideKernel } from "../fixtures/guide-kernels.ts";
import { setKernelCacheLimits } from "../../ts/backend/gpu/kernels.ts";

const rt = runtime();

/** Deterministic standard normals (mulberry32 + Box–Muller). */
function normals(count: number, seed: number): Float64Array {
  const uniform = mulberry32(seed);
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const u = Math.max(uniform(), 1e-12);
    out[i] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  }
  return out;
}

function upload<T extends Float32Array | Float16Array>(data: T): NativeBuffer {
  const buffer = rt.newBuffer(data.byteLength);
  new (data.constructor as new (b: ArrayBuffer) => T)(buffer.arrayBuffer).set(data);
  return buffer;
}

// MLX's generated source for `myexp` (§7.3). `float16_t` comes from MLX's utils.h, which
// metal_kernel includes automatically; here the typedef stands in for it.
function myexpSource(storage: "float" | "float16_t"): { source: string; name: string } {
  const name = `custom_kernel_myexp_float_${storage}_${storage}`;
  const source = `
#include <metal_stdlib>
using namespace metal;
typedef half float16_t;

template <typename T>
[[kernel]] void ${name}(
    const device ${storage}* inp [[buffer(0)]],
    device ${storage}* out [[buffer(1)]],
    uint3 thread_position_in_grid [[thread_position_in_grid]]) {

${guideKernel("myexp")}
}

template [[host_name("${name}")]] [[kernel]]
decltype(${name}<float>)
${name}<float>;
`;
  return { source, name };
}

function runMyexp(input: Float32Array | Float16Array, storage: "float" | "float16_t"): Float64Array {
  const { source, name } = myexpSource(storage);
  const pipeline = rt.library(source).pipeline(name);
  const inp = upload(input);
  const out = rt.newBuffer(input.byteLength);
  try {
    rt.newBatch()
      .dispatch({
        pipeline,
        buffers: [
          { index: 0, buffer: inp, access: "read" },
          { index: 1, buffer: out, access: "write" },
        ],
        grid: [input.length, 1, 1], // threads, as metal_kernel's grid (§7.4)
        threadgroup: [256, 1, 1],
        mustWrite: [1],
      })
      .submit()
      .wait();
    return Float64Array.from(storage === "float" ? out.as(Float32Array) : out.as(Float16Array));
  } finally {
    inp.release();
    out.release();
  }
}

describe("§8.1 myexp", () => {
  // 1000 elements: not a multiple of the 256-thread threadgroup, so the edge group is partial.
  for (const count of [64, 1000]) {
    test(`float32 storage, ${count} elements`, () => {
      const x = Float32Array.from(normals(count, 1 + count));
      const got = runMyexp(x, "float");
      for (let i = 0; i < count; i++) {
        const ref = Math.exp(x[i]!); // float64 reference
        expect(Math.abs(got[i]! - ref)).toBeLessThanOrEqual(4 * 2 ** -23 * ref);
      }
    });

    test(`float16 storage computed in float, ${count} elements`, () => {
      const x = Float16Array.from(normals(count, 7 + count), (v) => Math.f16round(v));
      const got = runMyexp(x, "float16_t");
      for (let i = 0; i < count; i++) {
        const ref = Math.exp(x[i]!);
        // One rounding to half (2^-11 relative) plus float32 exp's few ulps.
        expect(Math.abs(got[i]! - ref)).toBeLessThanOrEqual(2 ** -11 * ref * 1.01);
        expect(got[i]).toBe(Math.f16round(got[i]!));
      }
    });
  }
});

// §8.3 with the signature metal_kernel generates: x_shape/x_strides/x_ndim are added because the
// body mentions x_shape and x_ndim, and the attributes it names become arguments.
const ROWNORM_NAME = "custom_kernel_rownorm_float_float_float_float_float";
const ROWNORM_SOURCE = `
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void ${ROWNORM_NAME}(
    const device float* x [[buffer(0)]],
    const constant int* x_shape [[buffer(1)]],
    const constant int64_t* x_strides [[buffer(2)]],
    const constant int& x_ndim [[buffer(3)]],
    const device float* w [[buffer(4)]],
    const device float* eps [[buffer(5)]],
    device float* out [[buffer(6)]],
    uint3 thread_position_in_grid [[thread_position_in_grid]],
    uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],
    uint threads_per_simdgroup [[threads_per_simdgroup]]) {

${guideKernel("rownorm")}
}

template [[host_name("${ROWNORM_NAME}")]] [[kernel]]
decltype(${ROWNORM_NAME}<float>)
${ROWNORM_NAME}<float>;
`;

describe("§8.3 rownorm (simd_sum)", () => {
  for (const [rows, D] of [
    [17, 512],
    [3, 1000],
  ] as const) {
    test(`${rows}×${D}`, () => {
      const pipeline = rt.library(ROWNORM_SOURCE).pipeline(ROWNORM_NAME);
      expect(pipeline.threadExecutionWidth).toBe(32); // the host-side SIMD_WIDTH assumption (§8.3)
      const eps = 1e-5;
      const xs = Float32Array.from(normals(rows * D, 100 + rows));
      const ws = Float32Array.from(normals(D, 200 + D));
      const x = upload(xs);
      const w = upload(ws);
      const e = upload(new Float32Array([eps]));
      const out = rt.newBuffer(xs.byteLength);
      try {
        rt.newBatch()
          .dispatch({
            pipeline,
            buffers: [
              { index: 0, buffer: x, access: "read" },
              { index: 4, buffer: w, access: "read" },
              { index: 5, buffer: e, access: "read" },
              { index: 6, buffer: out, access: "write" },
            ],
            bytes: [
              { index: 1, data: new Int32Array([rows, D]) },
              { index: 2, data: new BigInt64Array([BigInt(D), 1n]) },
              { index: 3, data: new Int32Array([2]) },
            ],
            grid: [rows * 32, 1, 1],
            threadgroup: [256, 1, 1],
            mustWrite: [6],
          })
          .submit()
          .wait();
        const got = out.as(Float32Array);
        const epsF = Math.fround(eps);
        let worst = 0;
        for (let r = 0; r < rows; r++) {
          let ss = 0;
          for (let i = 0; i < D; i++) ss += xs[r * D + i]! ** 2;
          const scale = 1 / Math.sqrt(ss / D + epsF);
          for (let i = 0; i < D; i++) {
            const ref = xs[r * D + i]! * scale * ws[i]!;
            const err = Math.abs(got[r * D + i]! - ref) / (Math.abs(ref) + 1e-3);
            worst = Math.max(worst, err);
          }
        }
        expect(worst).toBeLessThan(1e-5);
      } finally {
        for (const b of [x, w, e, out]) b.release();
      }
    });
  }
});

describe("the kernel cache is bounded (issue 20)", () => {
  test("built pipelines, libraries and loaded simulator objects stay within the limits; evicted ones are rebuilt and give the same results", () => {
    const { previous } = rt.kernelCacheLimits({ pipelines: 4, libraries: 2, simulatorObjects: 2 });
    try {
      const scales = Array.from({ length: 12 }, (_, i) => i + 0.5);
      const out = rt.newBuffer(4 * 8);
      const input = upload(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]));
      const pipelines = scales.map((s) => {
        const source = `#include <metal_stdlib>\nusing namespace metal;\n[[kernel]] void scale_${String(s).replace(".", "_")}(device const float* a [[buffer(0)]], device float* o [[buffer(1)]], uint i [[thread_position_in_grid]]) { o[i] = a[i] * ${s}f; }`;
        return rt.library(source).pipeline(`scale_${String(s).replace(".", "_")}`);
      });
      const run = (k: number) => {
        rt.newBatch()
          .dispatch({ pipeline: pipelines[k]!, buffers: [{ index: 0, buffer: input, access: "read" }, { index: 1, buffer: out, access: "write" }], grid: 8, threadgroup: 8 })
          .submit()
          .wait();
        return Array.from(out.as(Float32Array));
      };
      for (let round = 0; round < 2; round++) {
        for (let k = 0; k < scales.length; k++) expect(run(k)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((v) => Math.fround(v * scales[k]!)));
        const { loaded } = rt.kernelCacheLimits({});
        expect(loaded.pipelines).toBeLessThanOrEqual(4);
        expect(loaded.libraries).toBeLessThanOrEqual(2);
        // on the simulator each built pipeline keeps its object loaded, and the cache at most 2 more
        if (rt.device.isSimulator) expect(loaded.simulatorObjects).toBeLessThanOrEqual(4 + 2 + 2);
      }
      const stats = JSON.parse(String(rt.native.mg_runtime_stats_json())) as { kernelsEvicted: number; pipelinesRebuilt: number };
      expect(stats.kernelsEvicted).toBeGreaterThan(0);
      expect(stats.pipelinesRebuilt).toBeGreaterThan(0);
    } finally {
      rt.kernelCacheLimits(previous);
    }
  });

  test("limits are validated", () => {
    expect(() => setKernelCacheLimits({ bogus: 1 } as never)).toThrow("[set_kernel_cache_limits] Unknown limit 'bogus'");
    expect(() => setKernelCacheLimits({ pipelines: -2 })).toThrow("[set_kernel_cache_limits] pipelines must be a non-negative integer");
  });
});
