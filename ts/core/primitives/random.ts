// RandomBits: raw random bits from threefry2x32 keys (MLX's RandomBits primitive).
//
// Input: keys of shape (N1, …, NK, 2), uint32. Output: shape (N1, …, NK, M1, …) of uint8,
// uint16 or uint32 (width 1, 2 or 4 bytes). Each key fills its own contiguous run of
// bytesPerKey = width · M1·… bytes with its stream (see ts/random/threefry.ts for the layout);
// the public `bits` op uses a single key of shape (2,). Rules: ts/core/rules/random.ts.
import { type Dtype, uint16, uint32, uint8 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

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
  opName: () => "bits",
  outputSpecs: (_keys, p) => [{ shape: [...p.shape], dtype: bitsDtype(p.width) }],
  random: true,
  paramsKey: (p) => `${p.shape.join(",")}|${p.width}`,
};
