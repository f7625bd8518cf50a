// mg.random: JAX/MLX threefry2x32 keys and the distributions of mlx.core.random, matching MLX's
// streams bit for bit (`mg.random.bits([], 4, mg.random.key(0))` is 1797259609, as in MLX).
export { bits, key, seed, split } from "./keys.ts";
export { bernoulli, categorical, gumbel, laplace, normal, permutation, randint, truncatedNormal, uniform } from "./distributions.ts";
export type { RandomArgs, RandomOptions, ShapeArg } from "./args.ts";
