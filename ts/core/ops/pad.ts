// The Pad node builder shared by mg.pad (ops/movement.ts) and Pad's rules (rules/movement.ts).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { Pad, type PadParams } from "../primitives/movement.ts";
import type { StreamOptions } from "./convert.ts";

/** A Pad node (the value already has a's dtype). */
export function padConstantRaw(a: MgArray, value: MgArray, p: PadParams, opts: StreamOptions = {}): MgArray {
  return makeArray(Pad, [a, value], p, resolveStream(opts.stream));
}
