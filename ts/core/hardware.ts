// Hardware gates: the facts kernel selection would branch on, answered the way MLX answers them
// (guide §4), so a user can see which side of each gate a machine is on.
import { release } from "node:os";

export interface ArchitectureFacts {
  architecture: string;
  generation: number;
  sizeClass: string;
  isSimulator: boolean;
}

/**
 * The OS version the Metal runtime offers, as [major, minor]: on macOS from the Darwin kernel
 * version (Darwin 25.x is macOS 26.x; before that macOS = Darwin − 9), on the simulator the
 * macOS generation MetalShim implements (26.2: Metal 4, TensorOps' symbol floor), elsewhere null.
 */
export function metalOsVersion(isSimulator: boolean): [number, number] | null {
  if (isSimulator) return [26, 2];
  if (process.platform !== "darwin") return null;
  const [major, minor] = release().split(".").map((s) => Number.parseInt(s, 10)) as [number, number];
  if (!Number.isFinite(major)) return null;
  return [major >= 25 ? major + 1 : major - 9, Number.isFinite(minor) ? minor : 0];
}

/**
 * MLX's is_nax_available() (its Metal device.cpp, guide §4.3): OS ≥ 26.2 and GPU
 * generation ≥ 17, or ≥ 18 for phone-class ('p') parts. On the simulator the architecture is the
 * simulated one (applegpu_g15s unless MG_GPU_ARCH says otherwise), so this is false by default.
 */
export function naxAvailable(a: ArchitectureFacts): boolean {
  const os = metalOsVersion(a.isSimulator);
  const osOk = os !== null && (os[0] > 26 || (os[0] === 26 && os[1] >= 2));
  return osOk && a.generation >= (a.sizeClass === "p" ? 18 : 17);
}

/** Whether MLX would run float32 matmuls on TF32-class NAX kernels here by default (MLX_ENABLE_TF32=1). */
export function tf32Default(a: ArchitectureFacts): boolean {
  return naxAvailable(a);
}

/** simdgroup_matrix (8×8 MMA) exists from the Apple7 family (A14/M1, generation 13) on. */
export function simdgroupMatrix(a: ArchitectureFacts): boolean {
  return a.generation >= 13;
}

/** The MSL `bfloat` type (Metal 3.1, macOS 14): kernels use bfloat16 natively rather than emulated. */
export function bfloat16Native(a: ArchitectureFacts): boolean {
  if (a.isSimulator) return true;
  const os = metalOsVersion(false);
  return os !== null && os[0] >= 14;
}
