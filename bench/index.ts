// Runs every benchmark in turn (each in its own process, so one's memory does not skew the next).
//   bun run bench            (or: bun run bench/<name>.bench.ts)
import { readdirSync } from "node:fs";

const dir = import.meta.dir;
const only = process.argv.slice(2);
for (const file of readdirSync(dir).filter((f) => f.endsWith(".bench.ts")).sort()) {
  if (only.length && !only.some((o) => file.includes(o))) continue;
  console.log(`\n# ${file}`);
  const r = Bun.spawnSync(["bun", "run", `${dir}/${file}`], { stdout: "inherit", stderr: "inherit", env: process.env });
  if (r.exitCode !== 0) console.log(`(exited with ${r.exitCode})`);
}
