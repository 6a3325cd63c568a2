/**
 * zod issues as one line: `spec.containers.0.image: expected string; …` (at most 8).
 */
import type { z } from 'zod';

/** Formats a zod error's issues as `path: message; …`. */
export function formatIssuesOf(err: z.ZodError): string {
  return err.issues
    .slice(0, 8)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}
