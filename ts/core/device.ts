// Devices and streams. A stream is an ordered queue of work on one device; every graph node
// records the stream it runs on. Scopes use AsyncLocalStorage so that interleaved async code
// never sees another scope's default stream.
import { AsyncLocalStorage } from "node:async_hooks";
import { warnOnce } from "./trace.ts";

/** "cpu" or "gpu". */
export type DeviceType = "cpu" | "gpu";

/**
 * A device (cpu or gpu), as mx.Device.
 * @example
 * mg.cpu.type
 */
export class Device {
  constructor(
    readonly type: DeviceType,
    readonly index = 0,
  ) {}
  /** "Device(cpu, 0)", as MLX prints a device. */
  toString(): string {
    return `Device(${this.type}, ${this.index})`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/**
 * A queue of work on a device, as mx.Stream.
 * @example
 * mg.defaultStream(mg.cpu).toString()
 */
export class Stream {
  constructor(
    readonly device: Device,
    readonly index: number,
  ) {}
  /** "Stream(Device(cpu, 0), 1)", as MLX prints a stream. */
  toString(): string {
    return `Stream(${this.device.toString()}, ${this.index})`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/** The CPU device (a Device; MLX's mx.cpu is a device type). */
export const cpu = new Device("cpu");
/** The GPU device: Metal, or the Metal simulator on Linux. */
export const gpu = new Device("gpu");

let nextStreamIndex = 0;
const defaultStreams = new Map<Device, Stream>();

/**
 * The default stream of a device, as mx.default_stream.
 * @example
 * mg.defaultStream(mg.cpu).device.type
 */
export function defaultStream(device: Device): Stream {
  if (!(device instanceof Device)) throw new TypeError(`[default_stream] Expected a device such as mg.cpu or mg.gpu, got ${String(device)}.`);
  if (device.type === "gpu" && gpuUnavailable !== null) throw gpuUnavailableError();
  let s = defaultStreams.get(device);
  if (!s) {
    s = new Stream(device, nextStreamIndex++);
    defaultStreams.set(device, s);
  }
  return s;
}

/**
 * A new stream on `device`, as mx.new_stream.
 * @example
 * mg.newStream(mg.cpu).device.type
 */
export function newStream(device: Device): Stream {
  if (device.type === "gpu" && gpuUnavailable !== null) throw gpuUnavailableError();
  return new Stream(device, nextStreamIndex++);
}

/**
 * Makes `stream` its device's default stream, as mx.set_default_stream.
 * @example
 * mg.setDefaultStream(mg.defaultStream(mg.defaultDevice()))
 */
export function setDefaultStream(stream: Stream): void {
  defaultStreams.set(stream.device, stream);
}

/**
 * The default device: the GPU where real Metal is present; elsewhere the CPU (mg.gpu then runs on
 * the Metal simulator, which is correct but not fast). MG_DEFAULT_DEVICE=cpu|gpu overrides.
 */
export function chooseDefaultDevice(realGpu: boolean): Device {
  const env = process.env.MG_DEFAULT_DEVICE;
  if (env === "gpu" && gpuUnavailable !== null) {
    warnOnce("no-gpu-default", `MG_DEFAULT_DEVICE=gpu, but there is no GPU device (${gpuUnavailable}): the CPU is the default.`);
    return cpu;
  }
  if (env === "gpu") return gpu;
  if (env === "cpu") return cpu;
  if (env !== undefined && env !== "") throw new Error(`[device] MG_DEFAULT_DEVICE must be 'cpu' or 'gpu', got '${env}'.`);
  return realGpu ? gpu : cpu;
}

let globalDefaultDevice: Device = cpu;

/**
 * The device ops run on when no stream is given, as mx.default_device.
 * @example
 * mg.defaultDevice().type
 */
export function defaultDevice(): Device {
  return scope.getStore()?.device ?? globalDefaultDevice;
}

/**
 * Makes `device` the default device, as mx.set_default_device.
 * @example
 * mg.setDefaultDevice(mg.cpu)
 */
export function setDefaultDevice(device: Device): void {
  if (!(device instanceof Device)) throw new TypeError("[set_default_device] expected a Device.");
  globalDefaultDevice = device;
}

/** Where an op runs: a stream, or a device (its default stream). */
export type StreamOrDevice = Stream | Device;

// Devices per type. The CPU device is always there. The GPU device is counted once index.ts has
// loaded the native runtime: real Metal on a Mac, elsewhere the Metal simulator. Without a runtime
// there is no GPU device, and asking for its stream says why (MLX: "[default_stream] Cannot get gpu
// stream without gpu backend.").
const deviceCounts: Record<DeviceType, number> = { cpu: 1, gpu: 0 };
let gpuUnavailable: string | null = null;

/**
 * Records how many devices of a type can run work (index.ts, after loading the runtime); for a GPU
 * count of 0, `reason` says why there is none and how to get one.
 */
export function setDeviceCount(type: DeviceType, count: number, reason?: string): void {
  deviceCounts[type] = count;
  if (type === "gpu") gpuUnavailable = count === 0 ? (reason ?? "no GPU backend") : null;
}

function gpuUnavailableError(): Error {
  return new Error(`[default_stream] Cannot get gpu stream without gpu backend: ${gpuUnavailable}. ` +
    "Run on the CPU device ({ stream: mg.cpu }); mg.deviceInfo() says more.");
}

function deviceTypeArgument(x: unknown, op: string): DeviceType {
  if (x instanceof Device) return x.type;
  if (x === "cpu" || x === "gpu") return x;
  const got = typeof x === "string" ? `'${x}'` : x === null ? "null" : typeof x;
  throw new TypeError(`[${op}] expected a device type ('cpu' or 'gpu') or a Device, got ${got}.`);
}

/**
 * How many devices of `deviceType` can run work, as mx.device_count: 1 for "cpu" and 1 for
 * "gpu". The GPU counts wherever metalgrad runs, because where there is no Metal its kernels run
 * on the Metal simulator, with Metal's semantics but CPU speed (`mg.deviceInfo().is_simulator`
 * says which); MLX's CPU-only builds report 0 GPUs instead. A Device is accepted for its type,
 * since mg.cpu and mg.gpu are Devices where MLX's mx.cpu and mx.gpu are device types.
 * @example
 * mg.deviceCount("cpu")
 */
export function deviceCount(deviceType: DeviceType | Device): number {
  return deviceCounts[deviceTypeArgument(deviceType, "device_count")];
}

/**
 * Whether work can run on a device or a device type, as mx.is_available: a type when it has a
 * device (see deviceCount: the GPU is available, as the simulator where there is no Metal), a
 * Device when its index is below its type's count (new Device("cpu", 1) is not available).
 * @example
 * mg.isAvailable(mg.cpu)
 */
export function isAvailable(device: Device | DeviceType): boolean {
  const type = deviceTypeArgument(device, "is_available");
  const count = deviceCounts[type];
  return device instanceof Device ? device.index < count : count > 0;
}

const scope = new AsyncLocalStorage<Stream>();

/** The stream an op runs on: the explicit one, else the innermost `stream()` scope, else the
 *  default device's default stream. */
export function resolveStream(s?: StreamOrDevice | null): Stream {
  if (s instanceof Stream) return s;
  if (s instanceof Device) return defaultStream(s);
  if (s !== undefined && s !== null) throw new TypeError("[stream] expected a Stream or a Device.");
  return scope.getStore() ?? defaultStream(globalDefaultDevice);
}

/**
 * Runs `fn` with `s` as the default stream, as MLX's `with mx.stream(s):`. Works for async `fn`:
 * the scope follows the async context, so interleaved scopes do not leak into each other.
 * @example
 * mg.stream(mg.cpu, () => mg.exp(mg.array([0]))).stream.device.type
 */
export function stream<T>(s: StreamOrDevice, fn: () => T): T {
  if (typeof fn !== "function") throw new TypeError(`[stream] Expected a function to run on the stream, got ${typeof fn}.`);
  return scope.run(resolveStream(s), fn);
}
