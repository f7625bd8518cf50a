// README.md's tour runs as written and prints what the README shows under each console.log: the
// comment lines right after a console.log (or after the `}` closing the block that logs) are its
// output. The import line names the package; the test binds `mg` to ts/index.ts instead.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../../ts/index.ts";

test("README's tour prints what the README says", () => {
  const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
  const tour = readme.slice(readme.indexOf("## A tour"));
  const code = tour.slice(tour.indexOf("```ts\n") + 6, tour.indexOf("\n```", tour.indexOf("```ts\n")));
  const lines = code.split("\n");
  const expected: string[] = [];
  let inOutput = false;
  lines.forEach((line, i) => {
    const prev = lines[i - 1]?.trim() ?? "";
    if (line.startsWith("//") && (inOutput || prev.includes("console.log(") || prev === "}")) {
      expected.push(line.replace(/^\/\/ ?/, ""));
      inOutput = true;
    } else inOutput = false;
  });
  expect(expected.length).toBeGreaterThan(10);

  const printed: string[] = [];
  const log = console.log;
  console.log = (...args: unknown[]) => {
    printed.push(...args.map((a) => (typeof a === "string" ? a : Bun.inspect(a))).join(" ").split("\n"));
  };
  try {
    const body = code.replace('import * as mg from "metalgrad";', "");
    const js = new Bun.Transpiler({ loader: "ts" }).transformSync(body);
    new Function("mg", js)(mg);
  } finally {
    console.log = log;
  }
  expect(printed).toEqual(expected);
});
