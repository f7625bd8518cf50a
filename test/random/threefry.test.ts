import { describe, expect, test } from "bun:test";
import {
  elementFromWords, keyWords, splitWords, streamLayout, streamWord, streamWords, threefry2x32,
} from "../../ts/random/threefry.ts";

describe("threefry2x32", () => {
  test("Random123 known-answer vectors (threefry2x32, 20 rounds)", () => {
    expect(threefry2x32(0, 0, 0, 0)).toEqual([0x6b200159, 0x99ba4efe]);
    expect(threefry2x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff)).toEqual([0x1cb996fc, 0xbb002be7]);
    expect(threefry2x32(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3)).toEqual([0xc4923a9c, 0x483df7a0]);
  });

  test("0x6b200159 is MLX's pinned bits of key(0): 1797259609", () => {
    expect(threefry2x32(0, 0, 0, 0)[0]).toBe(1797259609);
  });

  test("outputs are uint32 words", () => {
    for (let c = 0; c < 50; c++) {
      for (const w of threefry2x32(c * 2654435761, 12345, c, c * 7)) {
        expect(Number.isInteger(w) && w >= 0 && w < 2 ** 32).toBe(true);
      }
    }
  });
});

describe("MLX's stream layout", () => {
  test("layout of W words: H = floor(W/2), odd = W mod 2", () => {
    expect(streamLayout(1)).toEqual({ words: 1, half: 0, odd: true });
    expect(streamLayout(4)).toEqual({ words: 1, half: 0, odd: true });
    expect(streamLayout(5)).toEqual({ words: 2, half: 1, odd: false });
    expect(streamLayout(12)).toEqual({ words: 3, half: 1, odd: true });
    expect(streamLayout(0)).toEqual({ words: 0, half: 0, odd: false });
  });

  test("word j is a function of (key, counter): the per-word rule equals the bulk fill", () => {
    for (const words of [1, 2, 3, 4, 5, 8, 13, 64, 101]) {
      const layout = streamLayout(4 * words);
      const bulk = new Uint32Array(words);
      streamWords(0x01234567, 0x89abcdef, layout, bulk);
      for (let j = 0; j < words; j++) expect(streamWord(0x01234567, 0x89abcdef, layout, j)).toBe(bulk[j]!);
    }
  });

  test("counters: pairs (i, i + H + odd) fill words i and i + H + odd; the odd middle word uses (H, 0)", () => {
    const layout = streamLayout(4 * 5); // W = 5, H = 2
    const w = new Uint32Array(5);
    streamWords(3, 9, layout, w);
    expect(w[0]).toBe(threefry2x32(3, 9, 0, 3)[0]);
    expect(w[3]).toBe(threefry2x32(3, 9, 0, 3)[1]);
    expect(w[1]).toBe(threefry2x32(3, 9, 1, 4)[0]);
    expect(w[4]).toBe(threefry2x32(3, 9, 1, 4)[1]);
    expect(w[2]).toBe(threefry2x32(3, 9, 2, 0)[0]);
  });

  test("narrow elements are little-endian chunks of the words", () => {
    const words = new Uint32Array([0x6b200159, 0xa1b2c3d4]);
    expect([0, 1, 2, 3, 4].map((e) => elementFromWords(words, 1, e))).toEqual([0x59, 0x01, 0x20, 0x6b, 0xd4]);
    expect([0, 1, 2, 3].map((e) => elementFromWords(words, 2, e))).toEqual([0x0159, 0x6b20, 0xc3d4, 0xa1b2]);
    expect(elementFromWords(words, 4, 1)).toBe(0xa1b2c3d4);
  });

  test("seeds split into (high, low) words", () => {
    expect(keyWords(0n)).toEqual([0, 0]);
    expect(keyWords(1n)).toEqual([0, 1]);
    expect(keyWords(1n << 32n)).toEqual([1, 0]);
    expect(keyWords((1n << 32n) + 1n)).toEqual([1, 1]);
    expect(keyWords((1n << 64n) - 1n)).toEqual([0xffffffff, 0xffffffff]);
  });

  test("splitWords reproduces MLX's pinned split of key(0)", () => {
    // mlx/tests/random_tests.cpp "test random split"
    expect([...splitWords(0, 0, 2)]).toEqual([4146024105, 967050713, 2718843009, 1272950319]);
    expect([...splitWords(0, 0, 3)]).toEqual([2467461003, 428148500, 3186719485, 3840466878, 2562233961, 1946702221]);
  });
});
