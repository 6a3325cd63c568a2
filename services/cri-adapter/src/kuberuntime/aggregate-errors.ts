/**
 * Error texts joined as Go's utilerrors.NewAggregate prints them: one error as is, several (each
 * text once) as `[a, b]`; undefined for none.
 *
 * Models k8s.io/apimachinery/pkg/util/errors (NewAggregate, aggregate.Error).
 */
export function aggregateErrors(messages: readonly string[]): string | undefined {
  const unique = [...new Set(messages)];
  if (messages.length === 0) return undefined;
  if (messages.length === 1 || unique.length === 1) return unique[0];
  return `[${unique.join(', ')}]`;
}
