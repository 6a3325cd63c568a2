/** CriError: codes, retryability, message shape and the type guard. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CriError, CriErrorCodes, GrpcStatusOf, criErrorCodeFromGrpc, isCriError, parseCriErrorCode } from '../src/index.js';

describe('CriError', () => {
  it('maps every gRPC status code both ways', () => {
    for (const code of CriErrorCodes) assert.equal(criErrorCodeFromGrpc(GrpcStatusOf[code]), code);
    assert.deepEqual([5, 6, 14, 4, 3, 9, 2, 13, 12, 1, 8].map(criErrorCodeFromGrpc), [
      'NotFound',
      'AlreadyExists',
      'Unavailable',
      'DeadlineExceeded',
      'InvalidArgument',
      'FailedPrecondition',
      'Unknown',
      'Internal',
      'Unimplemented',
      'Canceled',
      'ResourceExhausted',
    ]);
    assert.equal(criErrorCodeFromGrpc(99), 'Unknown');
  });

  it('is retryable only for Unavailable, DeadlineExceeded and ResourceExhausted', () => {
    const retryable = CriErrorCodes.filter((c) => new CriError(c, 'x').retryable);
    assert.deepEqual(retryable, ['DeadlineExceeded', 'ResourceExhausted', 'Unavailable']);
  });

  it("reads like grpc-go's error text and keeps the details, method and cause", () => {
    const cause = new Error('wire');
    const e = new CriError('NotFound', 'container "x" not found', { method: 'ContainerStatus', cause });
    assert.equal(e.message, 'rpc error: code = NotFound desc = container "x" not found');
    assert.equal(e.details, 'container "x" not found');
    assert.equal(e.grpcCode, 5);
    assert.equal(e.method, 'ContainerStatus');
    assert.equal(e.cause, cause);
    assert.equal(e.name, 'CriError');
    assert.deepEqual(e.toWire(), { code: 'NotFound', message: e.message, retryable: false });
  });

  it('is recognised by code, also in its wire shape, never by instanceof', () => {
    const e = new CriError('Unavailable', 'down');
    const wire = e.toWire();
    assert.ok(isCriError(e));
    assert.ok(isCriError(e, 'Unavailable'));
    assert.ok(!isCriError(e, 'NotFound'));
    assert.ok(isCriError(JSON.parse(JSON.stringify(wire)), 'Unavailable'));
    assert.ok(!isCriError(new Error('x')));
    assert.ok(!isCriError({ code: 'Timeout' }));
    assert.ok(!isCriError(null));
  });

  it('parses codes as configuration writes them', () => {
    assert.equal(parseCriErrorCode('UNAVAILABLE'), 'Unavailable');
    assert.equal(parseCriErrorCode('NOT_FOUND'), 'NotFound');
    assert.equal(parseCriErrorCode('CANCELLED'), 'Canceled');
    assert.equal(parseCriErrorCode('DeadlineExceeded'), 'DeadlineExceeded');
    assert.equal(parseCriErrorCode('nope'), undefined);
  });
});
