// mg.utils: MLX's tree utilities (mlx.utils), through the options helper (ts/core/options.ts); they
// rearrange trees and build no arrays themselves.
import { publicNamespace } from "../core/options.ts";
import * as trees from "./tree.ts";

export const { treeFlatten, treeMap, treeMapWithPath, treeMerge, treeReduce, treeUnflatten } = publicNamespace("utils.", trees, { library: false });
export { TREE_NODE } from "./tree.ts";
export type { FlatTree, IsLeaf, TreeFlattenOptions, TreeNode } from "./tree.ts";
