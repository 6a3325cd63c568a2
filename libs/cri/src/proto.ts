/**
 * Loads `proto/api.proto` (shipped beside `src/` and `dist/`) into gRPC service definitions.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CRI_PACKAGE, type CriServiceName } from './services.js';

/**
 * Absolute path of the CRI proto subset. Resolved from this module's URL, so it is the same file
 * whether the code runs from `src/` (tsx) or `dist/` (built).
 */
export const CRI_PROTO_PATH: string = fileURLToPath(new URL('../proto/api.proto', import.meta.url));

/**
 * The decoding options every splitlet CRI peer uses; the types in `types.ts` describe their output.
 * camelCase fields, enums as names, 64-bit integers as decimal strings, defaults filled in.
 */
export const CRI_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: false,
};

let cached: Record<CriServiceName, grpc.ServiceClientConstructor> | undefined;
let definition: protoLoader.PackageDefinition | undefined;

/** The proto-loader definition of the CRI subset (services and messages). Loaded once per process, synchronously. */
export function loadCriDefinition(): protoLoader.PackageDefinition {
  definition ??= protoLoader.loadSync(CRI_PROTO_PATH, CRI_LOADER_OPTIONS);
  return definition;
}

/**
 * The client constructors (and, via `.service`, the service definitions) of `runtime.v1.RuntimeService`
 * and `runtime.v1.ImageService`. Loaded once per process, synchronously.
 */
export function loadCriServices(): Record<CriServiceName, grpc.ServiceClientConstructor> {
  if (cached !== undefined) return cached;
  const root = grpc.loadPackageDefinition(loadCriDefinition());
  const pkg = CRI_PACKAGE.split('.').reduce<grpc.GrpcObject>((obj, part) => obj[part] as grpc.GrpcObject, root);
  const runtime = pkg['RuntimeService'];
  const image = pkg['ImageService'];
  if (typeof runtime !== 'function' || typeof image !== 'function') {
    throw new Error(`${CRI_PROTO_PATH} does not define ${CRI_PACKAGE}.RuntimeService and ImageService`);
  }
  cached = { RuntimeService: runtime, ImageService: image };
  return cached;
}
