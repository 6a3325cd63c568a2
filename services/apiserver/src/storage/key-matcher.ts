/** Matching store keys (`pods.default.web`) against key filters, as NATS matches subjects. */

/** Whether a key is under a KV key filter (`*` one token, `>` the rest). */
export function keyMatcher(filter: string): (key: string) => boolean {
  const f = filter.split('.');
  return (key) => {
    const k = key.split('.');
    for (let i = 0; i < f.length; i++) {
      if (f[i] === '>') return k.length > i;
      if (i >= k.length || (f[i] !== '*' && f[i] !== k[i])) return false;
    }
    return k.length === f.length;
  };
}
