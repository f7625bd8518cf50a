// Scalar math the JS Math object lacks, accurate to float64 (the CPU device is the oracle).

/** Round half to even, as MLX's round (std::rint). */
export function roundHalfEven(x: number): number {
  if (!Number.isFinite(x)) return x;
  const r = Math.round(x); // rounds half up
  if (r - x === 0.5 && r % 2 !== 0) return r - 1;
  return r === 0 ? (x < 0 || Object.is(x, -0) ? -0 : 0) : r;
}

/** erf(x), |error| ≲ 1e-15: Maclaurin series near 0, continued fraction for erfc in the tails. */
export function erf(x: number): number {
  if (Number.isNaN(x) || x === 0) return x; // erf(±0) = ±0

  const ax = Math.abs(x);
  if (ax < 2) {
    // erf(x) = 2/√π · Σ (-1)^n x^(2n+1) / (n! (2n+1))
    let term = x;
    let sum = x;
    const x2 = x * x;
    for (let n = 1; n < 100; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  if (ax > 6) return x > 0 ? 1 : -1;
  return x > 0 ? 1 - erfcTail(ax) : erfcTail(ax) - 1;
}

// erfc(x) for x ≥ 2 by Lentz's continued fraction: e^{-x²}/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + …)))).
function erfcTail(x: number): number {
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let n = 1; n < 300; n++) {
    const an = n / 2;
    d = x + an * d;
    d = d === 0 ? tiny : 1 / d;
    c = x + an / c;
    if (c === 0) c = tiny;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / (Math.sqrt(Math.PI) * f);
}

/** erf⁻¹(y) on (-1, 1): Giles' single-precision approximation refined by Newton steps on erf. */
export function erfinv(y: number): number {
  if (Number.isNaN(y) || y < -1 || y > 1) return NaN;
  if (y === 1) return Infinity;
  if (y === -1) return -Infinity;
  let w = -Math.log((1 - y) * (1 + y));
  let x: number;
  if (w < 5) {
    w -= 2.5;
    let p = 2.81022636e-8;
    p = 3.43273939e-7 + p * w;
    p = -3.5233877e-6 + p * w;
    p = -4.39150654e-6 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = Math.sqrt(w) - 3;
    let p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * y;
  }
  // Newton: x ← x − (erf(x) − y) / (2/√π e^{−x²})
  for (let i = 0; i < 3; i++) {
    const err = erf(x) - y;
    x -= err / ((2 / Math.sqrt(Math.PI)) * Math.exp(-x * x));
  }
  return x;
}

/** Numerically stable log(exp(a) + exp(b)), as MLX: the larger operand itself when the smaller
 *  is -inf or the larger +inf (so logaddexp(-0, -inf) is -0). */
export function logaddexp(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return NaN;
  const hi = a > b ? a : b;
  const lo = a > b ? b : a;
  if (lo === -Infinity || hi === Infinity) return hi;
  return hi + Math.log1p(Math.exp(lo - hi));
}

/** C's pow: JS's Math.pow differs only where the base is ±1 (pow(1, y) = 1 for every y, NaN
 *  included; pow(-1, ±inf) = 1). */
export function powC(x: number, y: number): number {
  if (x === 1) return 1;
  if (x === -1 && (y === Infinity || y === -Infinity)) return 1;
  return Math.pow(x, y);
}

export function sigmoid(x: number): number {
  // Symmetric form avoids exp overflow for large |x|.
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

/** Floored remainder of integers held in doubles; x % 0 is x (MLX). */
export function floorModInt(a: number, b: number): number {
  return b === 0 ? a : floorMod(a, b);
}

/** Floored modulo (Python's %): fmod is exact; adjust toward the divisor's sign. */
export function floorMod(a: number, b: number): number {
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}

/** Floored integer division for integers held in doubles; x // 0 is 0, as MLX defines it (C would
 *  trap); INT_MIN // -1 comes out as 2^31 here and wraps to INT_MIN when stored. */
export function floorDivInt(a: number, b: number): number {
  if (b === 0) return 0;
  const r = a % b;
  let q = (a - r) / b;
  if (r !== 0 && r < 0 !== b < 0) q -= 1;
  return q;
}

export function floorDivBig(a: bigint, b: bigint): bigint {
  if (b === 0n) return 0n;
  const q = a / b;
  const r = a % b;
  return r !== 0n && r < 0n !== b < 0n ? q - 1n : q;
}

/** Floored remainder of integers; x % 0 is x (MLX: keeps x == (x // y) * y + x % y). */
export function floorModBig(a: bigint, b: bigint): bigint {
  if (b === 0n) return a;
  const r = a % b;
  return r !== 0n && r < 0n !== b < 0n ? r + b : r;
}

/** Integer power by squaring, wrapping at 64 bits; a negative exponent gives 0 (as MLX). */
export function powBig(base: bigint, exp: bigint): bigint {
  if (exp < 0n) return 0n;
  let result = 1n;
  let b = BigInt.asIntN(64, base);
  let e = exp;
  while (e > 0n) {
    if (e & 1n) result = BigInt.asIntN(64, result * b);
    b = BigInt.asIntN(64, b * b);
    e >>= 1n;
  }
  return result;
}

// Complex arithmetic on (re, im) pairs, in float64.

export const cmul = (ar: number, ai: number, br: number, bi: number): [number, number] => [ar * br - ai * bi, ar * bi + ai * br];

export const cdiv = (ar: number, ai: number, br: number, bi: number): [number, number] => {
  // Smith's algorithm avoids overflow in |b|².
  if (Math.abs(br) >= Math.abs(bi)) {
    const r = bi / br;
    const den = br + bi * r;
    return [(ar + ai * r) / den, (ai - ar * r) / den];
  }
  const r = br / bi;
  const den = br * r + bi;
  return [(ar * r + ai) / den, (ai * r - ar) / den];
};

export const cexp = (re: number, im: number): [number, number] => {
  const e = Math.exp(re);
  return im === 0 ? [e, 0] : [e * Math.cos(im), e * Math.sin(im)];
};

export const clog = (re: number, im: number): [number, number] => [Math.log(Math.hypot(re, im)), Math.atan2(im, re)];

export const csqrt = (re: number, im: number): [number, number] => {
  const m = Math.hypot(re, im);
  const r = Math.sqrt((m + re) / 2);
  const i = Math.sqrt((m - re) / 2);
  return [r, im < 0 || Object.is(im, -0) ? -i : i];
};
