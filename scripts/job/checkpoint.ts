// The checkpoint: the model's parameters as safetensors (MLX's names and layout, so MLX's
// mx.load reads it too), with the model configuration and task in the file's metadata; loading
// builds a fresh model from that metadata and loads the weights into it.
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/index.ts";
import { statSync } from "node:fs";
import { Decoder, type ModelConfig } from "./model.ts";

export interface CheckpointInfo {
  file: string;
  bytes: number;
  tensors: number;
}

export function saveCheckpoint(model: Decoder, file: string, extra: Record<string, string> = {}): CheckpointInfo {
  const weights = Object.fromEntries(model.namedParameters());
  mg.saveSafetensors(file, weights, { format: "mlx", model: "decoder", config: JSON.stringify(model.config), ...extra });
  return { file, bytes: statSync(file).size, tensors: Object.keys(weights).length };
}

/** A fresh model built from the checkpoint's metadata, with its weights loaded (strict: every name must match). */
export function loadCheckpoint(file: string): { model: Decoder; metadata: Record<string, string> } {
  const [arrays, metadata] = mg.load(file, { returnMetadata: true }) as [Record<string, MgArray>, Record<string, string>];
  if (typeof metadata.config !== "string") throw new Error(`[main] ${file}: no model config in the checkpoint's metadata`);
  const model = new Decoder(JSON.parse(metadata.config) as ModelConfig);
  model.loadWeights(Object.entries(arrays));
  mg.eval(model.parameters());
  return { model, metadata };
}
