// mg.random: JAX/MLX threefry2x32 keys and the distributions of mlx.core.random, matching MLX's
// streams bit for bit (`mg.random.bits([], 4, mg.random.key(0))` is 1797259609, as in MLX).
// Each draw is a library call (ts/core/ownership.ts): its key, bits and scaled temporaries are
// freed after their last use.
import { publicFunctions } from "../core/options.ts";
import * as keys from "./keys.ts";
import * as distributions from "./distributions.ts";

export const { bits, key, seed, split } = publicFunctions("random.", keys);
export const {
  bernoulli, categorical, gumbel, laplace, normal, permutation, randint, truncatedNormal, uniform,
} = publicFunctions("random.", distributions);
export type { ShapeArg } from "./args.ts";
