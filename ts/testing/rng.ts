// The seeded uniform generator tests and gradcheck share: mulberry32 (32 bits of state, one
// multiply-xorshift round per draw). Reproducible across runs and platforms, which Math.random is not.

export type Rng = () => number;

/** Uniform draws in [0, 1) from a 32-bit seed. */
export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
