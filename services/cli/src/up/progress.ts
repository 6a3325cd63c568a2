/**
 * Progress of a long step of `splitlet up` (starting containerd, building and importing images):
 * a line when it starts, one every `everyMs` while it runs, and one with its duration at the end.
 */

/** Runs `fn`, telling `out` what is going on. The timer is cleared whether `fn` resolves or throws. */
export async function withProgress<T>(out: NodeJS.WritableStream, label: string, fn: () => Promise<T>, everyMs = 5000): Promise<T> {
  const t0 = performance.now();
  const secs = (): string => `${((performance.now() - t0) / 1000).toFixed(1)}s`;
  out.write(`${label}…\n`);
  const timer = setInterval(() => out.write(`  … still ${label.charAt(0).toLowerCase()}${label.slice(1)} (${secs()})\n`), everyMs);
  try {
    const v = await fn();
    out.write(`${label}: done in ${secs()}\n`);
    return v;
  } catch (e) {
    out.write(`${label}: failed after ${secs()}\n`);
    throw e;
  } finally {
    clearInterval(timer);
  }
}
