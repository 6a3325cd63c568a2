/**
 * CriError: a failed CRI call, with the gRPC status turned into a string code.
 */
import { KubeletError } from '@splitlet/api';

/**
 * The CriError codes: the gRPC status codes in CamelCase (`NOT_FOUND` → `NotFound`,
 * `CANCELLED` → `Canceled`). `Unknown` is what runtimes send for most plain errors
 * (containerd 1.6 uses it for "name is reserved", "container is in … state", start failures).
 */
export const CriErrorCodes = [
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
] as const;
export type CriErrorCode = (typeof CriErrorCodes)[number];

/** gRPC numeric status code for each CriError code. */
export const GrpcStatusOf: Readonly<Record<CriErrorCode, number>> = {
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
};

const RETRYABLE: ReadonlySet<CriErrorCode> = new Set<CriErrorCode>(['Unavailable', 'DeadlineExceeded', 'ResourceExhausted']);

/** The CriError code for a gRPC numeric status (anything unexpected is `Unknown`). */
export function criErrorCodeFromGrpc(status: number): CriErrorCode {
  for (const code of CriErrorCodes) if (GrpcStatusOf[code] === status) return code;
  return 'Unknown';
}

/**
 * The CriError code for a name as a user may write it in configuration: a CriError code
 * (`Unavailable`), a gRPC enum name (`UNAVAILABLE`, `NOT_FOUND`), or `CANCELLED`. Undefined if unknown.
 */
export function parseCriErrorCode(name: string): CriErrorCode | undefined {
  const squashed = name.replaceAll('_', '').toLowerCase();
  if (squashed === 'cancelled') return 'Canceled';
  return CriErrorCodes.find((c) => c.toLowerCase() === squashed);
}

/** Options of {@link CriError}. */
export interface CriErrorOptions {
  cause?: unknown;
  /** The runtime's own text (the gRPC status details). @default the message */
  details?: string;
  /** The RPC that failed, e.g. `RunPodSandbox`. */
  method?: string;
}

/**
 * A failed CRI call. `message` reads like the kubelet's (grpc-go) error text,
 * `rpc error: code = NotFound desc = <details>`, because the kubelet puts that text in events and
 * container state messages. `retryable` is true for Unavailable, DeadlineExceeded and ResourceExhausted.
 *
 * Check with {@link isCriError}, never `instanceof`: the error may have crossed a process boundary
 * as the `{code, message, retryable}` wire shape.
 */
export class CriError extends KubeletError {
  override readonly name: string = 'CriError';
  declare readonly code: CriErrorCode;
  /** The runtime's text without the `rpc error:` prefix. */
  readonly details: string;
  /** The gRPC numeric status code. */
  readonly grpcCode: number;
  /** The RPC that failed, when known. */
  readonly method: string | undefined;

  constructor(code: CriErrorCode, details: string, options: CriErrorOptions = {}) {
    // grpc-go prints codes in CamelCase too (codes.Code.String), so the code doubles as the name.
    super(code, `rpc error: code = ${code} desc = ${options.details ?? details}`, {
      retryable: RETRYABLE.has(code),
      cause: options.cause,
    });
    this.details = options.details ?? details;
    this.grpcCode = GrpcStatusOf[code];
    this.method = options.method;
  }
}

const CODE_SET: ReadonlySet<string> = new Set(CriErrorCodes);

/**
 * True if `e` is a CriError (a local one or its wire shape), optionally with the given code.
 * Use it instead of `instanceof`.
 */
export function isCriError(e: unknown, code?: CriErrorCode): e is CriError {
  if (typeof e !== 'object' || e === null) return false;
  const c = (e as { code?: unknown }).code;
  if (typeof c !== 'string' || !CODE_SET.has(c)) return false;
  return code === undefined || c === code;
}
