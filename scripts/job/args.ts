// The main job's command line: `bun run scripts/main.ts [--device cpu|gpu] [--steps N] [--seed N]
// [--quick] [--out DIR]`. Parsing is pure (no process access) so tests can check every case.

export interface JobArgs {
  /** null: the default device (mg.defaultDevice(): the GPU where Metal exists, else the CPU). */
  device: "cpu" | "gpu" | null;
  /** null: the preset's number of steps. */
  steps: number | null;
  seed: number;
  /** A short run that proves the path end to end rather than reaching the accuracy goal. */
  quick: boolean;
  /** Where the loss curve and the checkpoint go. */
  out: string;
  help: boolean;
}

export const USAGE = `usage: bun run scripts/main.ts [options]
  --device cpu|gpu   device to train on (default: the GPU where Metal exists, else the CPU)
  --steps N          training steps (default: the preset's)
  --seed N           seed of the data and the initial weights (default 0)
  --quick            a short run that proves the whole path (fewer steps, smaller eval)
  --out DIR          where the loss curve and checkpoint are written (default out/)
  --help             this text`;

export class ArgsError extends Error {
  override name = "ArgsError";
}

function integer(flag: string, text: string | undefined, min: number): number {
  if (text === undefined || text.startsWith("--")) throw new ArgsError(`[main] ${flag} needs a value`);
  const n = Number(text);
  if (!/^[+-]?\d+$/.test(text) || !Number.isSafeInteger(n) || n < min) throw new ArgsError(`[main] ${flag} must be an integer ≥ ${min}, got '${text}'`);
  return n;
}

/** Parses argv (without the runtime and script). `--flag=value` and `--flag value` both work. */
export function parseArgs(argv: readonly string[]): JobArgs {
  const args: JobArgs = { device: null, steps: null, seed: 0, quick: false, out: "out", help: false };
  const list = argv.flatMap((a) => (a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a]));
  for (let i = 0; i < list.length; i++) {
    const flag = list[i]!;
    switch (flag) {
      case "--device": {
        const d = list[++i];
        if (d !== "cpu" && d !== "gpu") throw new ArgsError(`[main] --device must be 'cpu' or 'gpu', got ${d === undefined ? "nothing" : `'${d}'`}`);
        args.device = d;
        break;
      }
      case "--steps":
        args.steps = integer(flag, list[++i], 1);
        break;
      case "--seed":
        args.seed = integer(flag, list[++i], 0);
        break;
      case "--out": {
        const o = list[++i];
        if (o === undefined || o === "" || o.startsWith("--")) throw new ArgsError("[main] --out needs a directory");
        args.out = o;
        break;
      }
      case "--quick":
        args.quick = true;
        break;
      case "--help":
      case "-h":
        args.help = true;
        break;
      default:
        throw new ArgsError(`[main] unknown argument '${flag}'\n${USAGE}`);
    }
  }
  return args;
}
