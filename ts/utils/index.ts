// mg.utils: MLX's tree utilities (mlx.utils).
export { treeFlatten, treeMap, treeMapWithPath, treeMerge, treeReduce, treeUnflatten, TREE_NODE } from "./tree.ts";
export type { FlatTree, IsLeaf, TreeFlattenOptions, TreeNode } from "./tree.ts";
