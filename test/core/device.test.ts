// Devices as mx.device_count and mx.is_available see them.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

test("one CPU and one GPU device (Metal, or the Metal simulator where there is none)", () => {
  expect(mg.deviceCount("cpu")).toBe(1);
  expect(mg.deviceCount("gpu")).toBe(1);
  expect(mg.deviceCount(mg.gpu)).toBe(1);
  expect(mg.isAvailable("cpu")).toBe(true);
  expect(mg.isAvailable(mg.cpu)).toBe(true);
  expect(mg.isAvailable(mg.gpu)).toBe(true);
  // Available means work runs there: a GPU op evaluates.
  expect(mg.add(mg.array([1, 2]), 1, { stream: mg.gpu }).tolist()).toEqual([2, 3]);
});

test("a device index beyond the count is not available", () => {
  expect(mg.isAvailable(new mg.Device("cpu", 1))).toBe(false);
  expect(mg.isAvailable(new mg.Device("gpu", 3))).toBe(false);
});

test("anything but a device type or a Device is an error naming the function", () => {
  expect(() => mg.deviceCount("tpu" as mg.DeviceType)).toThrow("[device_count] expected a device type ('cpu' or 'gpu') or a Device, got 'tpu'.");
  expect(() => mg.isAvailable(1 as unknown as mg.DeviceType)).toThrow("[is_available] expected a device type ('cpu' or 'gpu') or a Device, got number.");
  expect(() => mg.isAvailable(mg.defaultStream(mg.cpu) as unknown as mg.Device)).toThrow("[is_available]");
});
