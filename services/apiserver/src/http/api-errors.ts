/**
 * API errors as the API server returns them: a `Status` object with the HTTP code, a reason and,
 * for invalid objects, the field causes.
 *
 * Models k8s.io/apimachinery/pkg/api/errors (NewNotFound, NewAlreadyExists, NewConflict,
 * NewInvalid, NewBadRequest, NewGone, NewMethodNotSupported, NewUnauthorized).
 */

/** One field cause of an Invalid error: the message without the field (`Invalid value: "x": …`). */
export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field: string;
}

/** An error with the `Status` the client gets. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: number;
  readonly reason: string;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  /** The `Status` body. */
  status(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details === undefined ? {} : { details: this.details }),
      code: this.code,
    };
  }

  static notFound(resource: string, name: string): ApiError {
    return new ApiError(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });
  }

  static alreadyExists(resource: string, name: string): ApiError {
    return new ApiError(409, 'AlreadyExists', `${resource} "${name}" already exists`, { name, kind: resource });
  }

  static conflict(resource: string, name: string, why: string): ApiError {
    return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": ${why}`, { name, kind: resource });
  }

  static invalid(kind: string, name: string, causes: readonly StatusCause[]): ApiError {
    const list = causes.map((c) => (c.field === '' ? c.message : `${c.field}: ${c.message}`));
    const text = list.length === 1 ? (list[0] as string) : `[${list.join(', ')}]`;
    return new ApiError(422, 'Invalid', `${kind} "${name}" is invalid: ${text}`, { name, kind, causes });
  }

  static badRequest(message: string): ApiError {
    return new ApiError(400, 'BadRequest', message);
  }

  static gone(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  }

  static methodNotSupported(resource: string, verb: string): ApiError {
    return new ApiError(405, 'MethodNotAllowed', `${verb} is not supported on resources of kind "${resource}"`);
  }

  static unauthorized(): ApiError {
    return new ApiError(401, 'Unauthorized', 'Unauthorized');
  }

  static unsupportedMediaType(type: string): ApiError {
    return new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got ${type})`,
    );
  }
}

/** True when `e` is an {@link ApiError}. */
export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
