// The expected-type assertions of api.types.ts are checked by the compiler (`bun run typecheck`).
// This test fails when they are no longer part of the checked program, or when a deliberate error
// in them stops being one (a @ts-expect-error that no longer errors is a compile error itself).
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as assertions from "./api.types.ts";

test("the type assertions are in the checked program and cover the API's groups", () => {
  expect(Object.keys(assertions).sort()).toEqual(["arrayMethods", "nn", "ops", "options", "transforms"]);
  const tsconfig = JSON.parse(readFileSync(join(import.meta.dir, "../../tsconfig.json"), "utf8")) as { include: string[] };
  expect(tsconfig.include).toContain("test");
  const source = readFileSync(join(import.meta.dir, "api.types.ts"), "utf8");
  expect(source.match(/@ts-expect-error/g)!.length).toBeGreaterThanOrEqual(10);
  expect(source.match(/Expect<Equal</g)!.length).toBeGreaterThanOrEqual(30);
});
