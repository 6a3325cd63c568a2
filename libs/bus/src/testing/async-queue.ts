/** An unbounded async queue: `push` never blocks, iteration waits for the next item until `stop`. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #stopped = false;

  push(item: T): void {
    if (this.#stopped) return;
    this.#items.push(item);
    this.#wake?.();
  }

  /** Ends the iteration (items still queued are dropped). */
  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (!this.#stopped) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }
}
