// The main job's task, generated in code: addition of two numbers of up to `digits` digits, as a
// string of characters ("123+45=168"). The model reads and writes every number least significant
// digit first and zero-padded ("321+540=8610"), the order in which a person adds with carries: the
// digits of one column then sit at fixed distances from the answer digit they make, which a
// transformer with relative positions (RoPE) learns in far fewer steps than most-significant-first.

/** Token ids: the digits are themselves, then '+' and '='. */
export const PLUS = 10;
export const EQUALS = 11;
export const VOCAB = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "="] as const;

export interface Problem {
  a: number;
  b: number;
}

/** The layout of one example: prompt "a+b=" (2·digits + 2 tokens), then the answer's digits + 1. */
export class AdditionTask {
  readonly digits: number;
  constructor(digits: number) {
    if (!Number.isInteger(digits) || digits < 1 || digits > 7) throw new RangeError(`[task] digits must be an integer in [1, 7], got ${digits}`);
    this.digits = digits;
  }
  /** Operands are in [0, limit). */
  get limit(): number {
    return 10 ** this.digits;
  }
  get promptLength(): number {
    return 2 * this.digits + 2;
  }
  get answerLength(): number {
    return this.digits + 1;
  }
  get sequenceLength(): number {
    return this.promptLength + this.answerLength;
  }

  /** `n` as `width` digit tokens, least significant first. */
  private digitsOf(n: number, width: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < width; i++, n = Math.floor(n / 10)) out.push(n % 10);
    return out;
  }

  /** The prompt tokens of a+b: reversed, zero-padded operands, '+', '='. */
  prompt({ a, b }: Problem): number[] {
    return [...this.digitsOf(a, this.digits), PLUS, ...this.digitsOf(b, this.digits), EQUALS];
  }
  /** The answer tokens of a+b: the sum's digits + 1 digits, least significant first. */
  answer({ a, b }: Problem): number[] {
    return this.digitsOf(a + b, this.answerLength);
  }
  /** Prompt and answer, the whole training sequence. */
  encode(p: Problem): number[] {
    return [...this.prompt(p), ...this.answer(p)];
  }
  /** The number written by answer tokens (least significant first); null if one is not a digit. */
  decodeAnswer(tokens: readonly number[]): number | null {
    let n = 0;
    for (let i = tokens.length - 1; i >= 0; i--) {
      const t = tokens[i]!;
      if (!Number.isInteger(t) || t < 0 || t > 9) return null;
      n = n * 10 + t;
    }
    return n;
  }
  /** How a person writes it: "123+45=168". */
  format({ a, b }: Problem, sum: number | null = a + b): string {
    return `${a}+${b}=${sum ?? "?"}`;
  }
  /** The model's view of a token sequence: "321+540=8610". */
  show(tokens: readonly number[]): string {
    return tokens.map((t) => VOCAB[t] ?? "?").join("");
  }
}

/** A small seeded generator (mulberry32): the same seed gives the same data on every machine. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = (Math.imul(seed | 0, 0x9e3779b1) ^ 0x5bd1e995) >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

const key = (p: Problem) => `${p.a}+${p.b}`;

/**
 * Held-out problems and a stream of training problems that never contains one of them. Held-out
 * problems are drawn uniformly (distinct) from the seed; training problems from a second stream.
 */
export class AdditionData {
  readonly task: AdditionTask;
  readonly heldOut: Problem[];
  private readonly heldOutKeys: Set<string>;
  private readonly rng: Rng;

  constructor(task: AdditionTask, heldOutCount: number, seed: number) {
    const pairs = task.limit * task.limit;
    if (heldOutCount > pairs / 2) throw new RangeError(`[task] ${heldOutCount} held-out problems leave too few of the ${pairs} for training`);
    this.task = task;
    const pick = new Rng(seed * 2 + 1);
    this.heldOutKeys = new Set();
    this.heldOut = [];
    while (this.heldOut.length < heldOutCount) {
      const p = { a: pick.int(task.limit), b: pick.int(task.limit) };
      if (this.heldOutKeys.has(key(p))) continue;
      this.heldOutKeys.add(key(p));
      this.heldOut.push(p);
    }
    this.rng = new Rng(seed * 2 + 2);
  }

  isHeldOut(p: Problem): boolean {
    return this.heldOutKeys.has(key(p));
  }

  /** `n` training problems (none held out). */
  trainingProblems(n: number): Problem[] {
    const out: Problem[] = [];
    while (out.length < n) {
      const p = { a: this.rng.int(this.task.limit), b: this.rng.int(this.task.limit) };
      if (!this.isHeldOut(p)) out.push(p);
    }
    return out;
  }

  /** A batch as flat int32 token rows: `n` sequences of task.sequenceLength tokens. */
  trainingBatch(n: number): Int32Array {
    const L = this.task.sequenceLength;
    const rows = new Int32Array(n * L);
    this.trainingProblems(n).forEach((p, i) => rows.set(this.task.encode(p), i * L));
    return rows;
  }
}
