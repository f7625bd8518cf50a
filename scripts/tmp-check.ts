import { collect, runExample } from "./api-docs.ts";
const entries = await collect();
for (const e of entries) for (const ex of e.examples) {
  try { runExample(e.key, ex); } catch (err) { console.log(`FAIL ${e.key}: ${(err as Error).message.split("\n")[0]!.slice(0, 200)}`); }
}
