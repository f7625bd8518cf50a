// MSL spellings of metalgrad dtypes.
import { bfloat16, bool_, complex64, type Dtype, float16, float32, float64, int16, int32, int64, int8, uint16, uint32, uint64, uint8 } from "../../core/dtype.ts";
import { float64OnGpuError } from "../../core/graph.ts";

const MSL = new Map<Dtype, string>([
  [bool_, "bool"],
  [uint8, "uint8_t"],
  [uint16, "uint16_t"],
  [uint32, "uint32_t"],
  [uint64, "uint64_t"],
  [int8, "int8_t"],
  [int16, "int16_t"],
  [int32, "int32_t"],
  [int64, "int64_t"],
  [float16, "half"],
  [float32, "float"],
  [bfloat16, "bfloat"],
  [complex64, "complex64_t"],
]);

/** Every dtype the GPU has a type for (all but float64), in MLX's order. */
export const GPU_DTYPES: readonly Dtype[] = [...MSL.keys()];

/** The MSL type of a dtype; float64 has none (Apple GPUs have no double precision, guide §1.5). */
export function mslType(d: Dtype, op = "gpu"): string {
  const t = MSL.get(d);
  if (!t) {
    if (d === float64) throw float64OnGpuError(op);
    throw new Error(`[${op}] ${d.name} has no GPU type.`);
  }
  return t;
}

/** A short dtype tag for kernel names: float32 → f32, bfloat16 → bf16 … */
export function dtypeTag(d: Dtype): string {
  return d.name.replace("float", "f").replace("uint", "u").replace("int", "i").replace("bool", "b").replace("complex", "c");
}
