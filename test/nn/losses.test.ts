// ts/nn/losses.ts against MLX's numbers, and its errors.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { functionTests } from "./function-cases.ts";

functionTests("loss_");

test("all 14 of MLX's losses exist", () => {
  const names = [
    "crossEntropy", "binaryCrossEntropy", "l1Loss", "mseLoss", "nllLoss", "gaussianNllLoss", "klDivLoss", "smoothL1Loss", "tripletLoss", "hingeLoss",
    "huberLoss", "logCoshLoss", "cosineSimilarityLoss", "marginRankingLoss",
  ];
  expect(Object.keys(mg.nn.losses).sort()).toEqual([...names].sort());
});

test("bad inputs are errors naming the loss", () => {
  const logits = mg.zeros([4, 5]);
  expect(() => mg.nn.losses.crossEntropy(logits, mg.array([0, 1, 2]))).toThrow("[cross_entropy] Targets shape (3,) does not match logits shape (4,5).");
  expect(() => mg.nn.losses.crossEntropy(logits, mg.array([0, 1, 2, 3]), { labelSmoothing: 1 })).toThrow("[cross_entropy] Label smoothing must be in [0, 1), got 1.");
  expect(() => mg.nn.losses.crossEntropy(logits, mg.array([0, 1, 2, 3]), mg.ones([3]))).toThrow("[cross_entropy] Weights with shape (3,) is not the same as output loss with shape (4,).");
  expect(() => mg.nn.losses.mseLoss(mg.zeros([2]), mg.zeros([3]))).toThrow("[mse_loss] Predictions shape (2,) does not match targets shape (3,).");
  expect(() => mg.nn.losses.l1Loss(mg.zeros([2]), mg.zeros([2]), "avg" as never)).toThrow("[l1_loss] Invalid reduction 'avg'");
  expect(() => mg.nn.losses.huberLoss(mg.zeros([2]), mg.zeros([2]), { reduce: "sum" } as never)).toThrow("[huber_loss] unknown option 'reduce'. Accepted options: 'delta', 'reduction'.");
  expect(() => mg.nn.losses.marginRankingLoss(mg.zeros([2]), mg.zeros([2]), mg.zeros([3]))).toThrow("[margin_ranking_loss] The shapes of the arguments do not match.");
});
