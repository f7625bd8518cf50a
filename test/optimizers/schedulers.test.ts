// ts/optimizers/schedulers.ts against MLX: each schedule's value at several steps.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { DEVICES, type Enc, evalTs, expectClose, loadFixture } from "../nn/fixtures.ts";

interface ScheduleCase {
  name: string;
  ts: string;
  steps: number[];
  values: Enc[];
}

const fixture = loadFixture<ScheduleCase>("schedules");

describe(`MLX ${fixture.mlx} schedules`, () => {
  for (const device of DEVICES) {
    test.each(fixture.cases.map((c) => [c.name, c] as const))(`%s on ${device.type}`, (_n, c) => {
      mg.stream(device, () => {
        const schedule = evalTs(c.ts) as mg.optimizers.Schedule;
        c.steps.forEach((s, i) => expectClose(schedule(mg.array(BigInt(s), mg.uint64)), c.values[i]!, `${c.name} at ${s}`, { rtol: 1e-6, atol: 1e-7 }));
      });
    });
  }
});

test("schedules check their arguments", () => {
  expect(() => mg.optimizers.stepDecay(0.1, 0.5, 0)).toThrow("[step_decay] step_size must be greater than 0, but got 0.");
  expect(() => mg.optimizers.cosineDecay(0.1, 0)).toThrow("[cosine_decay] decay_steps must be greater than 0, but got 0.");
  expect(() => mg.optimizers.linearSchedule(0, 1, 0)).toThrow("[linear_schedule] steps must be greater than 0, but got 0.");
  expect(() => mg.optimizers.joinSchedules([], [])).toThrow("[join_schedules] Must provide at least 1 schedule to join.");
  expect(() => mg.optimizers.joinSchedules([mg.optimizers.exponentialDecay(1, 0.5)], [3])).toThrow("[join_schedules] Received 1 boundaries but expected 0.");
  expect(() => mg.optimizers.cosineDecay(0.1, 5, { ending: 0 } as never)).toThrow("[cosine_decay] unknown option 'ending'. Accepted options: 'end'.");
});
