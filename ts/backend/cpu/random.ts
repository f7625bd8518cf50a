// CPU kernel of RandomBits (ts/core/primitives/random.ts): threefry2x32 streams (ts/random/threefry.ts,
// shared with the GPU kernel), one per key.
import { RandomBits } from "../../core/primitives/random.ts";
import { elementFromWords, streamLayout, streamWords } from "../../random/threefry.ts";
import { registerCpu } from "./registry.ts";
import { readNumbers, storageView } from "./values.ts";

registerCpu(RandomBits, ([keys], [out], p) => {
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
});
