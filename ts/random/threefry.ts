// Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011) with 20
// rounds, and the counter layout MLX's RandomBits uses, so that every stream matches MLX and JAX
// bit for bit. Everything here is a pure function of (key, counter): the CPU kernel calls it per
// element and the GPU kernel must compute exactly the same words.
//
// All arithmetic is on uint32 words held in JS numbers: `(a + b) >>> 0` wraps like C's uint32_t.

/** Rotation constants of Threefry-2x32, alternating between the two groups every 4 rounds. */
const ROTATIONS: readonly (readonly number[])[] = [
  [13, 15, 26, 6],
  [17, 29, 16, 24],
];

/** Key-schedule parity constant (Skein's C240). */
const KS_PARITY = 0x1bd11bda;

/**
 * One Threefry-2x32 block: encrypts the counter pair (c0, c1) under the key (k0, k1).
 * 5 groups of 4 rounds, with a key injection after every group. Returns the two output words.
 */
export function threefry2x32(k0: number, k1: number, c0: number, c1: number): [number, number] {
  const ks0 = k0 >>> 0;
  const ks1 = k1 >>> 0;
  const ks = [ks0, ks1, (ks0 ^ ks1 ^ KS_PARITY) >>> 0];
  let x = (c0 + ks0) >>> 0;
  let y = (c1 + ks1) >>> 0;
  for (let i = 0; i < 5; i++) {
    const rot = ROTATIONS[i % 2]!;
    for (let j = 0; j < 4; j++) {
      const r = rot[j]!;
      x = (x + y) >>> 0;
      y = ((y << r) | (y >>> (32 - r))) >>> 0;
      y = (y ^ x) >>> 0;
    }
    // Key injection: the schedule rotates through ks[0..2] and adds the group number.
    x = (x + ks[(i + 1) % 3]!) >>> 0;
    y = (y + ks[(i + 2) % 3]! + i + 1) >>> 0;
  }
  return [x, y];
}

/**
 * The layout of one key's random stream, as MLX's RandomBits (CPU and Metal agree on it).
 *
 * A key produces `bytesPerKey` bytes, i.e. W = ⌈bytesPerKey / 4⌉ little-endian uint32 words.
 * With H = ⌊W / 2⌋ and odd = W mod 2, the hash of counter (i, i + H + odd) for i < H gives
 * word i (first output) and word i + H + odd (second output); when W is odd, the middle word H
 * is the first output of counter (H, 0). Bytes past `bytesPerKey` in the last word are dropped.
 */
export interface StreamLayout {
  readonly words: number;
  readonly half: number;
  readonly odd: boolean;
}

export function streamLayout(bytesPerKey: number): StreamLayout {
  const words = Math.ceil(bytesPerKey / 4);
  return { words, half: Math.floor(words / 2), odd: words % 2 === 1 };
}

/** Word `j` (0 ≤ j < layout.words) of the stream of key (k0, k1). */
export function streamWord(k0: number, k1: number, layout: StreamLayout, j: number): number {
  const { half, odd } = layout;
  if (j < half) return threefry2x32(k0, k1, j, j + half + (odd ? 1 : 0))[0];
  if (odd && j === half) return threefry2x32(k0, k1, half, 0)[0];
  const i = j - half - (odd ? 1 : 0);
  return threefry2x32(k0, k1, i, j)[1];
}

/**
 * Fills `out` with the first `out.length` words of the stream of key (k0, k1) for a stream of
 * `layout.words` words (each hash is computed once and yields two words).
 */
export function streamWords(k0: number, k1: number, layout: StreamLayout, out: Uint32Array): void {
  const { half, odd } = layout;
  const shift = half + (odd ? 1 : 0);
  for (let i = 0; i < half; i++) {
    const [a, b] = threefry2x32(k0, k1, i, i + shift);
    out[i] = a;
    out[i + shift] = b;
  }
  if (odd) out[half] = threefry2x32(k0, k1, half, 0)[0];
}

/**
 * Element `e` of a key's stream read as unsigned integers of `width` bytes (1, 2 or 4), given the
 * stream's words: elements are consecutive little-endian chunks of the byte stream.
 */
export function elementFromWords(words: Uint32Array, width: 1 | 2 | 4, e: number): number {
  if (width === 4) return words[e]!;
  if (width === 2) return (words[e >>> 1]! >>> ((e & 1) * 16)) & 0xffff;
  return (words[e >>> 2]! >>> ((e & 3) * 8)) & 0xff;
}

/** The two uint32 words of the key MLX derives from a 64-bit seed: (seed >> 32, seed & 0xffffffff). */
export function keyWords(seed: bigint): [number, number] {
  return [Number((seed >> 32n) & 0xffffffffn), Number(seed & 0xffffffffn)];
}

/**
 * Splits key (k0, k1) into `num` keys, as MLX's split (random bits of shape (num, 2) from the
 * key): key n is words (2n, 2n + 1) of the key's stream of 2·num words.
 */
export function splitWords(k0: number, k1: number, num: number): Uint32Array {
  const layout = streamLayout(8 * num);
  const out = new Uint32Array(layout.words);
  streamWords(k0, k1, layout, out);
  return out;
}
