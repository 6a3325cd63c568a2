/** Shared test helpers for config-source. */
import { createLogger, type Logger } from '@splitlet/telemetry';

/** A logger whose records are kept as parsed objects. */
export function memoryLogger(service = 'test'): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const logger = createLogger({ service, level: 'debug', stream: { write: (l: string) => records.push(JSON.parse(l) as Record<string, unknown>) } });
  return { logger, records };
}

/** A minimal valid static pod manifest. */
export function manifest(name: string, image = 'busybox:1.36', extra = ''): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
${extra}spec:
  containers:
  - name: main
    image: ${image}
`;
}
