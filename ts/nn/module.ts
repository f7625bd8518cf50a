// mg.nn.Module, as mlx.nn.Module. MLX's Module is a dict whose entries are the attributes holding
// arrays, dicts, lists or modules; here those are the module's own enumerable properties with such
// values, in assignment order, so `this.query_proj = new Linear(…)` is the parameter subtree
// "query_proj" and MLX checkpoints load by name. Two JS adjustments:
//  - a JS array whose elements are all plain values (numbers, strings, booleans, null) is
//    configuration, like a Python tuple (`this.stride = [2, 2]`), not a list of members;
//  - bookkeeping (frozen names, training mode) is non-enumerable, outside the entries.
import { MgArray } from "../core/array.ts";
import { type Dtype, floating, issubdtype } from "../core/dtype.ts";
import { astype } from "../core/ops/elementwise.ts";
import { formatShape, shapesEqual } from "../core/shape.ts";
import { isPlainObject } from "../autograd/tree.ts";
import { isLibraryFunction, libraryFunction, retain, userCall } from "../core/ownership.ts";
import { keep } from "../memory/scope.ts";
import { load, saveSafetensors, savez } from "../io/index.ts";
import { checkOptionNames, resolveOptions, type Trailing } from "../core/options.ts";
import { treeFlatten, treeUnflatten, TREE_NODE, type FlatTree, type NestedTree } from "../utils/tree.ts";

/** Decides, for the module holding it, its key and the value, whether a value is kept. */
export type ModuleFilter = (module: Module, key: string, value: unknown) => boolean;

function isConfigTuple(v: readonly unknown[]): boolean {
  return v.length > 0 && v.every((e) => e === null || e === undefined || ["number", "string", "boolean", "bigint"].includes(typeof e));
}

/** True for values that are entries of a module: arrays, modules, plain objects and lists. */
export function isMemberValue(v: unknown): boolean {
  return v instanceof MgArray || v instanceof Module || isPlainObject(v) || (Array.isArray(v) && !isConfigTuple(v));
}

/** "dict" in MLX's filters: a plain object or a module. */
function isDict(v: unknown): boolean {
  return v instanceof Module || isPlainObject(v);
}

function isList(v: unknown): v is unknown[] {
  return Array.isArray(v) && !isConfigTuple(v);
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "list";
  if (typeof v === "object") return (v as object).constructor?.name ?? "object";
  return typeof v;
}

/** Whether a property of a module is one of its entries (MLX's dict items): arrays, modules, objects, lists. */
type IsEntry<V> = [V] extends [Function] ? false
  : [V] extends [readonly (number | string | boolean | bigint | null | undefined)[]] ? false
  : [V] extends [MgArray | Module | readonly unknown[] | { readonly [key: string]: unknown }] ? true
  : false;

/**
 * The parameter tree of a module (or of any entry), as parameters() and trainableParameters()
 * return it and nn.valueAndGrad's gradients come: its array entries, recursively through
 * submodules, objects and lists, by property name.
 */
export type ParametersOf<T> = T extends MgArray ? MgArray
  : T extends readonly (infer E)[] ? ParametersOf<E>[]
  : T extends object ? { [K in keyof T as K extends "state" ? never : K extends string ? (IsEntry<NonNullable<T[K]>> extends true ? K : never) : never]: ParametersOf<T[K]> }
  : never;

/** A tree of entries as update() and updateModules() take it: a partial or full tree like parameters(). */
export type EntryTree = NestedTree;

/**
 * freeze's and unfreeze's options: recurse, keys, strict.
 */
export interface FreezeOptions {
  /** Also (un)freeze the submodules' parameters. Default true. */
  recurse?: boolean;
  /** Only these parameter names (in every module visited); default all. */
  keys?: string | readonly string[] | null;
  /** Check that the keys exist. Default false. */
  strict?: boolean;
}

/**
 * The base class of layers and models, as mlx.nn.Module: its array, module, object and list properties are its parameters and children (MLX's names: `layers.0.weight`); call it with `m.forward(x)`.
 * @example
 * class Mlp extends mg.nn.Module {
 *   l1 = new mg.nn.Linear(2, 3);
 *   override forward(x: mg.MgArray) { return mg.nn.relu(this.l1.forward(x)); }
 * }
 * Object.keys(new Mlp().parameters().l1)
 */
export class Module {
  /** Names of this module's frozen entries (no gradient through nn.valueAndGrad). */
  declare protected readonly _noGrad: Set<string>;
  declare private _training: boolean;

  constructor() {
    Object.defineProperty(this, "_noGrad", { value: new Set<string>(), enumerable: false, writable: true });
    Object.defineProperty(this, "_training", { value: true, enumerable: false, writable: true });
  }

  /** The module's computation: a module is called as `m.forward(x)`. */
  forward(..._args: unknown[]): unknown {
    throw new Error(`[Module] ${this.constructor.name} does not define forward().`);
  }

  /** True in training mode (the default); see train() and eval(). */
  get training(): boolean {
    return this._training;
  }

  /** The module's state dictionary: the module itself, as in MLX (its entries are the state). */
  get state(): this {
    return this;
  }

  /** The entries (arrays, modules, objects, lists), in assignment order. */
  items(): [string, unknown][] {
    return Object.entries(this).filter(([, v]) => isMemberValue(v));
  }

  /** Whether `key` is an entry of this module (MLX's `key in module`). */
  has(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this, key) && isMemberValue((this as Record<string, unknown>)[key]);
  }

  [TREE_NODE](): [string, unknown][] {
    return this.items();
  }

  /** Extra text inside the module's printed form, as MLX's `_extra_repr`. */
  protected _extraRepr(): string {
    return "";
  }

  /**
   * The module tree as MLX prints it.
   */
  toString(): string {
    const kids = treeFlatten(this.children(), "", Module.isModule) as FlatTree;
    let s = `${this.constructor.name}(${this._extraRepr()}`;
    for (const [k, v] of kids) s += `\n${`(${k}): ${String(v)}`.replace(/^/gm, "  ")}`;
    if (kids.length > 0) s += "\n";
    return `${s})`;
  }

  static isModule(value: unknown): value is Module {
    return value instanceof Module;
  }

  static validChildFilter: ModuleFilter = (_m, _k, v) => isDict(v) || isList(v);

  static validParameterFilter: ModuleFilter = (_m, k, v) =>
    (isDict(v) || isList(v) || v instanceof MgArray) && !k.startsWith("_");

  static trainableParameterFilter: ModuleFilter = (m, k, v) =>
    Module.validParameterFilter(m, k, v) && !m._noGrad.has(k);

  /**
   * The entries kept by `filterFn`, recursively, as nested objects and lists, with `mapFn` applied
   * to the leaves (MLX's filter_and_map). `isLeafFn` decides what is a leaf (default: anything
   * that is not a module, object or list). Inside objects and lists, dropped values leave `{}`.
   */
  filterAndMap(filterFn: ModuleFilter, mapFn?: ((x: never) => unknown) | null, isLeafFn?: ModuleFilter | null): Record<string, unknown> {
    const map = (mapFn ?? ((x: unknown) => x)) as (x: unknown) => unknown;
    const isLeaf = isLeafFn ?? ((_m: Module, _k: string, v: unknown) => !(isDict(v) || isList(v)));
    const unwrap = (model: Module, key: string, value: unknown): unknown => {
      if (isLeaf(model, key, value)) return map(value);
      if (value instanceof Module) {
        const out: Record<string, unknown> = {};
        for (const [k, v] of value.items()) if (filterFn(value, k, v)) out[k] = unwrap(value, k, v);
        return out;
      }
      if (isPlainObject(value)) {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
          const tk = `${key}.${k}`;
          out[k] = filterFn(model, tk, v) ? unwrap(model, tk, v) : {};
        }
        return out;
      }
      if (isList(value)) {
        return value.map((v, i) => {
          const tk = `${key}.${i}`;
          return filterFn(model, tk, v) ? unwrap(model, tk, v) : {};
        });
      }
      throw new Error(`[Module] Unexpected leaf found while traversing the module at '${key}'.`);
    };
    const out: Record<string, unknown> = {};
    for (const [k, v] of this.items()) if (filterFn(this, k, v)) out[k] = unwrap(this, k, v);
    return out;
  }

  /** Every array of the module, recursively, as nested objects and lists. */
  parameters(): ParametersOf<this> {
    return this.filterAndMap(Module.validParameterFilter) as ParametersOf<this>;
  }

  /** The arrays that are not frozen. */
  trainableParameters(): ParametersOf<this> {
    return this.filterAndMap(Module.trainableParameterFilter) as ParametersOf<this>;
  }

  /** The direct submodules. */
  children(): Record<string, unknown> {
    return this.filterAndMap(Module.validChildFilter, null, (_m, _k, v) => v instanceof Module);
  }

  /** The submodules that contain no other modules. */
  leafModules(): Record<string, unknown> {
    const isLeafModule: ModuleFilter = (_m, _k, v) =>
      v instanceof Module && (treeFlatten(v.children()) as FlatTree).length === 0;
    return this.filterAndMap(Module.validChildFilter, null, isLeafModule);
  }

  /**
   * Replaces parameters with those in `parameters` (a full or partial tree like parameters()), as
   * MLX's update(parameters, strict=True): with `strict`, every key must exist and every array
   * must be replaced by an array. Arrays stored in a module outlive the tidy scope that made them.
   */
  update(parameters: EntryTree, ...rest: Trailing<[strict: boolean], { strict?: boolean }>): this {
    const { strict } = resolveOptions("Module.update", rest, { strict: true });
    updateTree(this, parameters, strict as boolean, true);
    return this;
  }

  /** update() for transforms: stores tracers without taking them out of tidy scopes. */
  updateUnkept(parameters: EntryTree): this {
    updateTree(this, parameters, false, false);
    return this;
  }

  /**
   * Maps the parameters kept by `filterFn` (default validParameterFilter) through `mapFn` and
   * stores the results, as MLX's apply: `m.apply((x) => x.astype(mg.float16))`.
   */
  apply(mapFn: (x: MgArray) => MgArray, filterFn?: ModuleFilter | null): this {
    return this.update(this.filterAndMap(filterFn ?? Module.validParameterFilter, mapFn as (x: never) => unknown));
  }

  /** Replaces child modules with those in `modules` (a tree like children()), as MLX's update_modules. */
  updateModules(modules: EntryTree, ...rest: Trailing<[strict: boolean], { strict?: boolean }>): this {
    const { strict } = resolveOptions("Module.update_modules", rest, { strict: true });
    updateModuleTree(this, modules, strict as boolean);
    return this;
  }

  /** Calls `applyFn(path, module)` on this module and every submodule (paths like "layers.0.linear"). */
  applyToModules(applyFn: (path: string, module: Module) => unknown): this {
    const stack: [string, Module][] = [["", this]];
    while (stack.length > 0) {
      const [prefix, mod] = stack.pop()!;
      applyFn(prefix, mod);
      const p = prefix ? `.${prefix}` : "";
      stack.push(...(treeFlatten(mod.children(), p, Module.isModule) as [string, Module][]));
    }
    return this;
  }

  /** This module and all its submodules. */
  modules(): Module[] {
    const out: Module[] = [];
    this.applyToModules((_k, m) => void out.push(m));
    return out;
  }

  /** [dotted path, module] for this module ("") and all its submodules. */
  namedModules(): [string, Module][] {
    const out: [string, Module][] = [];
    this.applyToModules((k, m) => void out.push([k, m]));
    return out;
  }

  private validateKeys(keys: string | readonly string[], strict: boolean, op: string): string[] {
    const list = typeof keys === "string" ? [keys] : [...keys];
    if (strict) for (const k of list) if (!this.has(k)) throw new Error(`[${op}] Module doesn't contain member ${k}.`);
    return list;
  }

  private validateKeysRecursive(keys: string | readonly string[], op: string): void {
    const list = typeof keys === "string" ? [keys] : [...keys];
    const mods = this.modules();
    for (const k of list) if (!mods.some((m) => m.has(k))) throw new Error(`[${op}] Module doesn't contain member ${k}.`);
  }

  /**
   * Freezes parameters (no gradients for them), as MLX's freeze(*, recurse=True, keys=None,
   * strict=False): `m.freeze({ keys: "bias" })`.
   */
  freeze(options: FreezeOptions = {}): this {
    checkOptionNames("Module.freeze", options, ["recurse", "keys", "strict"]);
    const { recurse = true, keys = null } = options;
    let strict = options.strict ?? false;
    const freezeOne = (_: string, m: Module) => {
      let local: string | readonly string[] | null = keys;
      if (local === null) {
        const own = m.filterAndMap((mm, k, v) => !(v instanceof Module) && Module.validParameterFilter(mm, k, v));
        local = (treeFlatten(own) as FlatTree).map(([k]) => k);
      }
      for (const k of m.validateKeys(local, strict, "freeze")) m._noGrad.add(k);
    };
    if (recurse) {
      if (strict && keys !== null) {
        this.validateKeysRecursive(keys, "freeze");
        strict = false;
      }
      this.applyToModules(freezeOne);
    } else freezeOne("", this);
    return this;
  }

  /** Unfreezes parameters, as MLX's unfreeze(*, recurse=True, keys=None, strict=False). */
  unfreeze(options: FreezeOptions = {}): this {
    checkOptionNames("Module.unfreeze", options, ["recurse", "keys", "strict"]);
    const { recurse = true, keys = null } = options;
    let strict = options.strict ?? false;
    const unfreezeOne = (_: string, m: Module) => {
      if (keys === null) m._noGrad.clear();
      else for (const k of m.validateKeys(keys, strict, "unfreeze")) m._noGrad.delete(k);
    };
    if (recurse) {
      if (strict && keys !== null) {
        this.validateKeysRecursive(keys, "unfreeze");
        strict = false;
      }
      this.applyToModules(unfreezeOne);
    } else unfreezeOne("", this);
    return this;
  }

  /** Sets this module's own training flag (train()/eval() set it on every submodule). */
  protected _setTrainingMode(mode: boolean): void {
    this._training = mode;
  }

  /** Sets training mode (Dropout drops, BatchNorm updates its running statistics) on every module. */
  train(mode = true): this {
    this.applyToModules((_, m) => m._setTrainingMode(mode));
    return this;
  }

  /** Sets evaluation mode: train(false). */
  eval(): this {
    return this.train(false);
  }

  /**
   * Casts parameters to `dtype`, as MLX's set_dtype: by default only floating parameters
   * (`predicate` decides otherwise; null casts all).
   */
  setDtype(dtype: Dtype, predicate: ((d: Dtype) => boolean) | null = (d) => issubdtype(d, floating)): void {
    const pred = predicate ?? (() => true);
    this.apply((x) => (pred(x.dtype) ? astype(x, dtype) : x));
  }

  /**
   * Loads weights from [name, array] pairs or a {name: array} object, as MLX's
   * load_weights(file_or_weights, strict=True). With `strict` the names and shapes must match the
   * parameters exactly; otherwise only the given weights are set, unchecked.
   */
  loadWeights(
    fileOrWeights: string | FlatTree | Record<string, unknown>,
    ...rest: Trailing<[strict: boolean], { strict?: boolean }>
  ): this {
    const { strict } = resolveOptions("load_weights", rest, { strict: true });
    let source: FlatTree | Record<string, unknown>;
    if (typeof fileOrWeights === "string") {
      // As MLX: a .safetensors or .npz file of dotted names (a .npy holds a single array, no names).
      const loaded = load(fileOrWeights);
      if (loaded instanceof MgArray || Array.isArray(loaded)) {
        throw new Error(`[load_weights] ${fileOrWeights}: expected a .safetensors or .npz file of named arrays.`);
      }
      source = loaded;
    } else source = fileOrWeights;
    const weights: FlatTree = Array.isArray(source) ? source : Object.entries(source);
    if (strict) {
      const given = new Map(weights);
      const current = new Map(treeFlatten(this.parameters()) as FlatTree);
      const extras = [...given.keys()].filter((k) => !current.has(k)).sort();
      if (extras.length > 0) throw new Error(`[load_weights] Received ${extras.length} parameters not in model: \n${extras.join(",\n")}.`);
      const missing = [...current.keys()].filter((k) => !given.has(k)).sort();
      if (missing.length > 0) throw new Error(`[load_weights] Missing ${missing.length} parameters: \n${missing.join(",\n")}.`);
      for (const [k, v] of current) {
        const w = given.get(k);
        if (!(w instanceof MgArray)) throw new TypeError(`[load_weights] Expected an array but received ${typeName(w)} for parameter ${k}`);
        const cur = v as MgArray;
        if (!shapesEqual(w.shape, cur.shape)) {
          throw new Error(`[load_weights] Expected shape ${formatShape(cur.shape)} but received shape ${formatShape(w.shape)} for parameter ${k}`);
        }
      }
    }
    if (weights.length > 0) this.update(treeUnflatten(weights) as EntryTree, false);
    return this;
  }

  /**
   * The parameters as [dotted name, array] pairs: what saveWeights writes (MLX's
   * tree_flatten(model.parameters())).
   */
  namedParameters(): [string, MgArray][] {
    return treeFlatten(this.parameters()) as [string, MgArray][];
  }

  /** Saves the parameters to `.safetensors` or `.npz`, as MLX's save_weights. */
  saveWeights(file: string): void {
    const named = Object.fromEntries(this.namedParameters());
    if (file.endsWith(".npz")) savez(file, named);
    else if (file.endsWith(".safetensors")) saveSafetensors(file, named);
    else throw new Error(`[save_weights] Unsupported file extension for ${file}. Use '.npz' or '.safetensors'.`);
  }
}

/** Module.update's walk (MLX's `apply` inside update). */
function updateTree(dst: unknown, parameters: unknown, strict: boolean, keepArrays: boolean): void {
  const store = (container: any, key: string | number, value: unknown) => {
    // A module's arrays outlive the library call (ownership) and the tidy scope that made them.
    if (keepArrays && value instanceof MgArray) keep(retain(value));
    container[key] = value;
  };
  const visit = (d: any, p: unknown): void => {
    if (isPlainObject(p)) {
      for (const k of Object.keys(p)) {
        const present = d instanceof Module ? d.has(k) : isPlainObject(d) ? Object.prototype.hasOwnProperty.call(d, k) : false;
        if (present) {
          const current = d[k];
          const next = p[k];
          if (current instanceof MgArray) {
            if (strict && !(next instanceof MgArray)) throw new TypeError(`[Module.update] Received invalid type: ${typeName(next)}.`);
            store(d, k, next);
          } else visit(current, next);
        } else if (strict) throw new Error(`[Module.update] Module does not have parameter named "${k}".`);
      }
    } else if (Array.isArray(p)) {
      for (let i = 0; i < p.length; i++) {
        if (!Array.isArray(d) || i >= d.length) {
          if (strict) throw new Error(`[Module.update] List index ${i} is out of bounds for destination of length ${Array.isArray(d) ? d.length : 0}.`);
          continue;
        }
        const current = d[i];
        const next = p[i];
        if (current instanceof MgArray) {
          if (strict && !(next instanceof MgArray)) throw new TypeError(`[Module.update] Received invalid type: ${typeName(next)}.`);
          store(d, i, next);
        } else visit(current, next);
      }
    } else if (strict) throw new TypeError(`[Module.update] Received invalid type: ${typeName(p)}.`);
  };
  visit(dst, parameters);
}

/** Module.updateModules' walk (MLX's _update_modules). */
function updateModuleTree(dst: any, modules: unknown, strict: boolean): void {
  const isEmptyDict = (v: unknown) => isPlainObject(v) && Object.keys(v).length === 0;
  const visitEntry = (container: any, key: string | number, next: unknown) => {
    const current = container[key];
    if (current instanceof Module && next instanceof Module) container[key] = next;
    else if (isDict(current) || isList(current)) updateModuleTree(current, next, strict);
    else if (strict && !isEmptyDict(next)) throw new TypeError(`[Module.update_modules] Received invalid type: ${typeName(next)}.`);
  };
  if (isPlainObject(modules)) {
    for (const k of Object.keys(modules)) {
      const present = dst instanceof Module ? dst.has(k) : isPlainObject(dst) && Object.prototype.hasOwnProperty.call(dst, k);
      if (present) visitEntry(dst, k, modules[k]);
      else if (strict) throw new Error(`[Module.update_modules] Module does not have sub-module named "${k}".`);
    }
  } else if (Array.isArray(modules)) {
    for (let i = 0; i < modules.length; i++) {
      if (!Array.isArray(dst) || i >= dst.length) {
        if (strict) throw new Error(`[Module.update_modules] List index ${i} is out of bounds for destination of length ${Array.isArray(dst) ? dst.length : 0}.`);
        continue;
      }
      visitEntry(dst, i, modules[i]);
    }
  } else if (strict) throw new TypeError(`[Module.update_modules] Received invalid type: ${typeName(modules)}.`);
}

/**
 * Makes the forward of built-in layers a library call (ts/core/ownership.ts): the intermediates it
 * creates and does not return are freed after their last use. Layers that run the user's code
 * (their activation, a user's submodule) call it through `callUser`.
 */
export function libraryForward(...classes: { prototype: Module }[]): void {
  for (const c of classes) {
    const proto = c.prototype as unknown as { forward: (...args: unknown[]) => unknown };
    proto.forward = libraryFunction(proto.forward);
  }
}

/** Applies a function or module that may be the user's: as user code unless it is a library call. */
export function callUser<R = MgArray>(f: ((x: never) => R) | Module, x: unknown): R {
  // A module passed where a function is expected (an activation, a schedule) returns what one would.
  if (f instanceof Module) return (isLibraryFunction(f.forward) ? f.forward(x) : userCall(() => f.forward(x))) as R;
  const g = f as (x: unknown) => R;
  return isLibraryFunction(g) ? g(x) : userCall(() => g(x));
}
