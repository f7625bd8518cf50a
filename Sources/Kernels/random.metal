// RandomBits: threefry2x32 (20 rounds) with MLX's counter layout, bit-identical to the CPU device
// (ts/random/threefry.ts describes the layout).
//
// Each key produces bytes_per_key = per_key · sizeof(U) bytes, W = ⌈bytes_per_key / 4⌉
// little-endian words. With H = ⌊W / 2⌋ and odd = W mod 2, hashing counter (i, i + H + odd) gives
// words i and i + H + odd; when W is odd, the middle word H is the first output of counter (H, 0).
// Thread (i, k) computes hash i of key k and writes the elements of U its words cover, so every
// element is written by exactly one thread; bytes of the last word past the stream are dropped.
#include "utils.h"

constant constexpr uint kThreefryRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};

// One Threefry-2x32 block: the counter pair encrypted under the key, 5 groups of 4 rounds with a
// key injection after each group.
MG_FUNC uint2 threefry2x32(uint2 key, uint2 counter) {
  const uint ks[3] = {key.x, key.y, key.x ^ key.y ^ 0x1BD11BDAu};
  uint x = counter.x + ks[0];
  uint y = counter.y + ks[1];
  for (uint group = 0; group < 5; ++group) {
    for (uint r = 0; r < 4; ++r) {
      const uint rot = kThreefryRotations[group % 2][r];
      x += y;
      y = (y << rot) | (y >> (32 - rot));
      y ^= x;
    }
    x += ks[(group + 1) % 3];
    y += ks[(group + 2) % 3] + group + 1;
  }
  return uint2(x, y);
}

struct RandomBitsParams {
  int64_t keys_base;  // element offset of the keys view's first element
  uint per_key;       // elements of U each key produces
  uint words;         // W: words per key
  uint half_words;    // H = W / 2
  uint odd;           // W mod 2
  int keys_ndim;
  int pad;
};

// Writes the elements of U that word `w` of key `key`'s stream covers.
template <typename U>
MG_FUNC void write_word(device U* out, constant const RandomBitsParams& p, uint key, uint w, uint word) {
  constexpr uint per_word = 4 / sizeof(U);
  const uint first = w * per_word;
  device U* row = out + ulong(key) * ulong(p.per_key);
  for (uint e = 0; e < per_word && first + e < p.per_key; ++e) {
    row[first + e] = U(word >> (8 * sizeof(U) * e));
  }
}

// Grid: x over the H + odd hashes of a key, y over keys. Keys are (…, 2) uint32 in any layout:
// key k is elements 2k and 2k + 1 of the keys array in row-major order.
template <typename U>
[[kernel]] void random_bits(
    device const uint* keys [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const RandomBitsParams& p [[buffer(2)]],
    constant const int* key_shape [[buffer(3)]],
    constant const int64_t* key_strides [[buffer(4)]],
    uint2 gid [[thread_position_in_grid]]) {
  const uint i = gid.x;
  const uint k = gid.y;
  if (i >= p.half_words + p.odd) return;
  const int64_t k0 = p.keys_base + elem_to_loc<int64_t>(2 * int64_t(k), key_shape, key_strides, p.keys_ndim);
  const int64_t k1 = p.keys_base + elem_to_loc<int64_t>(2 * int64_t(k) + 1, key_shape, key_strides, p.keys_ndim);
  const uint2 key = uint2(keys[k0], keys[k1]);
  const uint shift = p.half_words + p.odd;
  if (i == p.half_words) {
    // odd W: the middle word alone
    write_word(out, p, k, i, threefry2x32(key, uint2(i, 0)).x);
    return;
  }
  const uint2 bits = threefry2x32(key, uint2(i, i + shift));
  write_word(out, p, k, i, bits.x);
  write_word(out, p, k, i + shift, bits.y);
}
