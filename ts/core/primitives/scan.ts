// Cumulative reductions along one axis (MLX's Scan): sum, prod, max, min, logaddexp; reverse and
// inclusive/exclusive. Rules: ts/core/rules/scan.ts.
import type { Primitive } from "../primitive.ts";

export type ScanType = "sum" | "prod" | "max" | "min" | "logaddexp";

/** The op each scan type is (error tags and kernel names). */
export const SCAN_OPS: Record<ScanType, string> = { sum: "cumsum", prod: "cumprod", max: "cummax", min: "cummin", logaddexp: "logcumsumexp" };

export interface ScanParams {
  type: ScanType;
  axis: number;
  reverse: boolean;
  inclusive: boolean;
}

export const Scan: Primitive<ScanParams> = {
  name: "Scan",
  opName: (p) => SCAN_OPS[p.type],
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  shapeless: "infer",
  paramsKey: (p) => `${p.type}|${p.axis}|${p.reverse}|${p.inclusive}`,
};
