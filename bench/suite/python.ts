// The client of bench/suite/worker.py: one long-lived Python process holding MLX and numpy, asked
// one request at a time, so its rounds interleave with metalgrad's and both see the same load.
import type { FileSink, Subprocess } from "bun";
import { join } from "node:path";

export interface PythonInfo {
  mlx: string | null;
  mlxDevices: string[];
  numpy: string | null;
  python: string;
}

export type Reply = Record<string, unknown> & { error?: string; na?: string };

export class PythonWorker {
  private readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  private readonly lines: AsyncGenerator<string>;
  private stopped = false;

  private constructor(python: string) {
    this.proc = Bun.spawn([python, join(import.meta.dir, "worker.py")], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const stdout = this.proc.stdout;
    this.lines = (async function* () {
      const decoder = new TextDecoder();
      let buf = "";
      for await (const chunk of stdout) {
        buf += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          yield buf.slice(0, nl);
          buf = buf.slice(nl + 1);
        }
      }
    })();
  }

  /** Starts the worker with `python`; null (and the reason) when it cannot answer. */
  static async start(python: string): Promise<{ worker: PythonWorker; info: PythonInfo } | { reason: string }> {
    let worker: PythonWorker;
    try {
      worker = new PythonWorker(python);
    } catch (e) {
      return { reason: `${python} does not run (${(e as Error).message})` };
    }
    const info = await worker.ask({ cmd: "hello" });
    if (info.error) {
      worker.stop();
      return { reason: info.error };
    }
    return { worker, info: info as unknown as PythonInfo };
  }

  async ask(request: Record<string, unknown>): Promise<Reply> {
    if (this.stopped) return { error: "the Python worker has stopped" };
    (this.proc.stdin as FileSink).write(JSON.stringify(request) + "\n");
    (this.proc.stdin as FileSink).flush();
    const next = await this.lines.next();
    if (next.done) {
      this.stopped = true;
      const err = await new Response(this.proc.stderr).text();
      return { error: `the Python worker stopped${err ? `: ${err.trim().split("\n").slice(-3).join(" | ")}` : ""}` };
    }
    return JSON.parse(next.value) as Reply;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    (this.proc.stdin as FileSink).end();
    this.proc.kill();
  }
}
