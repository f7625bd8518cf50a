// RandomBits on the GPU (Sources/Kernels/random.metal): threefry2x32 with MLX's counter layout,
// bit-identical to the CPU device. Keys may be any view (vmap hands over transposed ones).
import type { Node } from "../../core/array.ts";
import { RandomBits, type RandomBitsParams } from "../../core/primitives/random.ts";
import { Precision } from "../../core/trace.ts";
import { streamLayout } from "../../random/threefry.ts";
import { type GpuEncoder, int32Bytes, int64Bytes } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { linearThreadgroup } from "./launch.ts";
import { registerGpu } from "./registry.ts";

const ELEMENT: Record<number, string> = { 1: "uint8_t", 2: "uint16_t", 4: "uint32_t" };

function bitsKernel(width: number): KernelInstance {
  const U = ELEMENT[width];
  if (!U) throw new Error(`[bits] Bit width must be in {1, 2, 4} but got ${width}.`);
  return { file: "random.metal", name: `mg_random_bits_u${8 * width}`, instantiation: `random_bits<${U}>` };
}

function encodeRandomBits(enc: GpuEncoder, node: Node<RandomBitsParams>): void {
  const keys = node.inputs[0]!;
  const out = node.outputs[0]!;
  const width = node.params.width;
  const numKeys = keys.size / 2;
  const perKey = out.size / numKeys;
  if (perKey >= 2 ** 32) throw new Error(`[bits] ${perKey} elements per key are too many for the GPU (at most 2^32 - 1).`);
  const layout = streamLayout(perKey * width);
  const pipeline = kernelPipeline(bitsKernel(width));
  const k = enc.input(keys, 0);
  const o = enc.output(out, 1);
  const params = new ArrayBuffer(32);
  const v = new DataView(params);
  v.setBigInt64(0, BigInt(k.base), true);
  v.setUint32(8, perKey, true);
  v.setUint32(12, layout.words, true);
  v.setUint32(16, layout.half, true);
  v.setUint32(20, layout.odd ? 1 : 0, true);
  v.setInt32(24, keys.ndim, true);
  const hashes = layout.half + (layout.odd ? 1 : 0);
  enc.dispatch(
    {
      pipeline,
      buffers: [k.binding, o.binding],
      bytes: [{ index: 2, data: new Uint8Array(params) }, int32Bytes(3, keys.shape), int64Bytes(4, k.strides)],
      grid: [hashes, numKeys, 1],
      threadgroup: linearThreadgroup(pipeline, hashes),
      mustWrite: [1],
    },
    {
      primitives: ["RandomBits"],
      inputs: [keys],
      outputs: [out],
      layout: `${k.rowContiguous ? "contiguous" : "strided"} keys, ${numKeys} key${numKeys === 1 ? "" : "s"}`,
      precision: Precision.exact,
    },
  );
}

registerGpu(RandomBits, {
  kind: "kernel",
  kernels: (node) => [bitsKernel(node.params.width)],
  encode: encodeRandomBits,
});
