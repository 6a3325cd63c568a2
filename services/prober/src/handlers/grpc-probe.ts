/**
 * grpc probe: `grpc.health.v1.Health/Check` for the probe's service on host:port, plaintext, the
 * whole call bounded by the timeout. SERVING is success ("service healthy"); every other answer or
 * error is a failure with the kubelet's text.
 *
 * Models pkg/probe/grpc/grpc.go (Probe). The two messages are encoded by hand (one field each):
 * HealthCheckRequest{service = 1}, HealthCheckResponse{status = 1}.
 */
import * as grpc from '@grpc/grpc-js';
import { formatGoDuration } from '@splitlet/kube';
import type { HandlerOutcome } from '../prober/probe-type.js';
import { joinHostPort } from './resolve-port.js';

/** grpc.health.v1.HealthCheckResponse.ServingStatus names. */
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** Encodes HealthCheckRequest{service} (an empty service is the empty message). */
export function encodeHealthCheckRequest(service: string): Buffer {
  if (service === '') return Buffer.alloc(0);
  const s = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a, ...varint(s.length)]), s]);
}

/** Decodes HealthCheckResponse's status (0 when absent); skips unknown fields. */
export function decodeHealthCheckStatus(b: Buffer): number {
  let i = 0;
  let status = 0;
  const readVarint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = b[i++];
      if (byte === undefined) throw new Error('truncated HealthCheckResponse');
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
    }
  };
  while (i < b.length) {
    const tag = readVarint();
    const wire = tag & 7;
    if (wire === 0) {
      const v = readVarint();
      if (tag >>> 3 === 1) status = v;
    } else if (wire === 2) {
      i += readVarint();
    } else if (wire === 1) {
      i += 8;
    } else if (wire === 5) {
      i += 4;
    } else {
      throw new Error(`unsupported wire type ${wire} in HealthCheckResponse`);
    }
  }
  return status;
}

const HealthClient = grpc.makeGenericClientConstructor(
  {
    Check: {
      path: '/grpc.health.v1.Health/Check',
      requestStream: false,
      responseStream: false,
      requestSerialize: (service: string) => encodeHealthCheckRequest(service),
      requestDeserialize: (b: Buffer) => b.toString(),
      responseSerialize: (n: number) => Buffer.from([0x08, ...varint(n)]),
      responseDeserialize: (b: Buffer) => decodeHealthCheckStatus(b),
    },
  },
  'Health',
);

/** Runs one gRPC health check; never throws. */
export async function grpcProbe(host: string, port: number, service: string, timeoutMs: number, userAgent: string): Promise<HandlerOutcome> {
  const addr = joinHostPort(host, port);
  const timeout = formatGoDuration(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  const client = new HealthClient(addr, grpc.credentials.createInsecure(), { 'grpc.primary_user_agent': userAgent });
  try {
    try {
      await new Promise<void>((resolve, reject) => client.waitForReady(deadline, (e) => (e ? reject(e) : resolve())));
    } catch {
      return { result: 'failure', output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${timeout}: context deadline exceeded` };
    }
    const checked = await new Promise<{ status: number } | { error: grpc.ServiceError }>((resolve) => {
      (client as unknown as { Check: (req: string, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: number) => void) => void }).Check(
        service,
        new grpc.Metadata(),
        { deadline },
        (e, r) => resolve(e === null ? { status: r ?? 0 } : { error: e }),
      );
    });
    if ('error' in checked) {
      const e = checked.error;
      if (e.code === grpc.status.UNIMPLEMENTED)
        return { result: 'failure', output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${e.details}` };
      if (e.code === grpc.status.DEADLINE_EXCEEDED) return { result: 'failure', output: `timeout: health rpc did not complete within ${timeout}` };
      return { result: 'failure', output: `error: health rpc probe failed: rpc error: code = ${grpcCodeName(e.code)} desc = ${e.details}` };
    }
    if (checked.status !== 1)
      return { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(SERVING_STATUS[checked.status] ?? String(checked.status))})` };
    return { result: 'success', output: 'service healthy' };
  } finally {
    client.close();
  }
}

function grpcCodeName(code: number): string {
  const name = Object.entries(grpc.status).find(([, v]) => Number(v) === code)?.[0] ?? String(code);
  return name.toLowerCase().replace(/(^|_)([a-z])/g, (_, _u: string, c: string) => c.toUpperCase());
}
