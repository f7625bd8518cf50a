// RandomBits: raw random bits from threefry2x32 keys (MLX's RandomBits primitive).
//
// Input: keys of shape (N1, …, NK, 2), uint32. Output: shape (N1, …, NK, M1, …) of uint8,
// uint16 or uint32 (width 1, 2 or 4 bytes). Each key fills its own contiguous run of
// bytesPerKey = width · M1·… bytes with its stream (see ts/random/threefry.ts for the layout);
// the public `bits` op uses a single key of shape (2,).
import type { MgArray } from "../array.ts";
import { type Dtype, uint16, uint32, uint8 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { readNumbers, storageView } from "../../backend/cpu/values.ts";
import { elementFromWords, streamLayout, streamWords } from "../../random/threefry.ts";
import { randomBitsRule } from "../../backend/gpu/random.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { transpose } from "../ops/shape.ts";
import { zeros, zerosLike } from "../ops/creation.ts";

export type BitWidth = 1 | 2 | 4;

export interface RandomBitsParams {
  /** The full output shape, key batch dimensions first. */
  shape: number[];
  /** Bytes per element. */
  width: BitWidth;
}

export function bitsDtype(width: BitWidth): Dtype {
  return width === 4 ? uint32 : width === 2 ? uint16 : uint8;
}

export const RandomBits: Primitive<RandomBitsParams> = {
  name: "RandomBits",
  outputSpecs: (_keys, p) => [{ shape: [...p.shape], dtype: bitsDtype(p.width) }],
  cpu([keys], [out], p) {
    out!.allocate();
    const n = out!.size;
    if (n === 0) return;
    const k = readNumbers(keys!); // row-major (k0, k1) pairs; uint32 values are exact doubles
    const numKeys = k.length / 2;
    const perKey = n / numKeys;
    const layout = streamLayout(perKey * p.width);
    const words = new Uint32Array(layout.words);
    const view = storageView(out!) as Uint8Array | Uint16Array | Uint32Array;
    for (let key = 0; key < numKeys; key++) {
      streamWords(k[2 * key]!, k[2 * key + 1]!, layout, words);
      const base = key * perKey;
      for (let e = 0; e < perKey; e++) view[base + e] = elementFromWords(words, p.width, e);
    }
  },
  gpu: randomBitsRule,
  // Random draws carry no derivative with respect to their keys (integer inputs).
  vjp: ([keys], _g, argnums) => argnums.map(() => zerosLike(keys!)),
  jvp: (_p, _t, _a, [out]) => [zeros(out!.shape, out!.dtype)],
  // Batched keys become leading output dimensions: one stream per key, as MLX's rule. The key
  // pair must stay the last axis, so a batch axis there is swapped with the one before it.
  vmap([keys], [axis], p): [MgArray[], number[]] {
    let k = keys!;
    let kax = axis!;
    if (kax === k.ndim - 1) {
      const perm = Array.from({ length: k.ndim }, (_, i) => i);
      [perm[kax], perm[kax - 1]] = [perm[kax - 1]!, perm[kax]!];
      k = transpose(k, perm);
      kax--;
    }
    const shape = [...p.shape];
    if (kax >= 0) shape.splice(kax, 0, k.shape[kax]!);
    // The node's stream (vmap runs rules on it), not the keys' stream: keys often live on the CPU.
    const out = makeArray(RandomBits, [k], { shape, width: p.width }, resolveStream());
    return [[out], [kax]];
  },
  paramsKey: (p) => `${p.shape.join(",")}|${p.width}`,
};
