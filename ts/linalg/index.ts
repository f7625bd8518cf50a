// mg.linalg: MLX 0.32.4's 19 functions (ts/core/ops/linalg.ts), each a library call
// (ts/core/ownership.ts): the factors and casts a composite function builds internally are freed
// after their last use.
import { publicNamespace } from "../core/options.ts";
import * as ops from "../core/ops/linalg.ts";

export const {
  norm, qr, svd, inv, triInv, pinv, cholesky, choleskyInv, cross, det, slogdet, eig, eigvals, eigh,
  eigvalsh, lu, luFactor, solve, solveTriangular,
} = publicNamespace("linalg.", ops);
