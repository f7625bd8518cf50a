// Hardware gates in deviceInfo: MLX's NAX rule (generation ≥ 17, ≥ 18 for 'p' parts, OS ≥ 26.2),
// checked through MG_GPU_ARCH in child processes (the architecture is read when the runtime loads).
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { naxAvailable } from "../../ts/core/hardware.ts";

test("the rule itself", () => {
  const sim = (architecture: string, generation: number, sizeClass: string) => ({ architecture, generation, sizeClass, isSimulator: true });
  expect(naxAvailable(sim("applegpu_g15s", 15, "s"))).toBe(false);
  expect(naxAvailable(sim("applegpu_g16s", 16, "s"))).toBe(false);
  expect(naxAvailable(sim("applegpu_g17g", 17, "g"))).toBe(true);
  expect(naxAvailable(sim("applegpu_g17p", 17, "p"))).toBe(false);
  expect(naxAvailable(sim("applegpu_g18p", 18, "p"))).toBe(true);
});

test("this device's gates", () => {
  const info = mg.deviceInfo();
  for (const key of ["architecture_generation", "size_class", "nax_available", "tf32_default", "simdgroup_matrix", "bfloat16_native", "precision"]) {
    expect(info).toHaveProperty(key);
  }
  expect(info.nax_kernels).toBe(false);
  if (info.is_simulator) {
    // The simulator is an M3 Max (applegpu_g15s) unless MG_GPU_ARCH says otherwise.
    if (!process.env.MG_GPU_ARCH) {
      expect(info.architecture).toBe("applegpu_g15s");
      expect(info.nax_available).toBe(false);
      expect(info.tf32_default).toBe(false);
    }
    expect(info.simdgroup_matrix).toBe(true);
    expect(info.bfloat16_native).toBe(true);
    expect(info.os_version).toBe("26.2 (simulated)");
  }
});

test.if(mg.deviceInfo().is_simulator === true)("MG_GPU_ARCH moves the simulated device across the gate", () => {
  const probe = (arch: string) => {
    const r = Bun.spawnSync({
      cmd: [process.execPath, "-e", 'import * as mg from "./ts/index.ts"; const i = mg.deviceInfo(); console.log(JSON.stringify([i.architecture_generation, i.size_class, i.nax_available, i.tf32_default]))'],
      env: { ...process.env, MG_GPU_ARCH: arch },
      cwd: `${import.meta.dir}/../..`,
    });
    expect(r.exitCode).toBe(0);
    return JSON.parse(r.stdout.toString().trim());
  };
  expect(probe("applegpu_g17s")).toEqual([17, "s", true, true]);
  expect(probe("applegpu_g17p")).toEqual([17, "p", false, false]);
  expect(probe("applegpu_g18p")).toEqual([18, "p", true, true]);
  expect(probe("applegpu_g16g")).toEqual([16, "g", false, false]);
});
