/**
 * An unbounded single-consumer queue exposed as an async iterator: producers `push`, then `end` or
 * `fail`; the consumer iterates. Used for server-streamed events, where items arrive before anyone
 * iterates and must not be lost.
 */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  readonly #items: T[] = [];
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  #done = false;
  #error: { error: unknown } | undefined;
  readonly #onReturn: (() => void) | undefined;

  /** @param onReturn called once when the consumer stops early (`break`, `return()`). */
  constructor(onReturn?: () => void) {
    this.#onReturn = onReturn;
  }

  /** Queues an item; ignored after `end`/`fail`. */
  push(item: T): void {
    if (this.#done) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve({ value: item, done: false });
    } else {
      this.#items.push(item);
    }
  }

  /** Ends the stream after the queued items. Idempotent. */
  end(): void {
    if (this.#done) return;
    this.#done = true;
    const waiter = this.#waiter;
    if (waiter !== undefined && this.#items.length === 0) {
      this.#waiter = undefined;
      waiter.resolve({ value: undefined, done: true });
    }
  }

  /** Ends the stream with an error, thrown to the consumer after the queued items. */
  fail(error: unknown): void {
    if (this.#done) return;
    this.#error = { error };
    this.end();
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.reject(error);
    }
  }

  /** Drops the queued items and ends the stream with `error` at once (a consumer too slow to keep). */
  abort(error: unknown): void {
    if (this.#done) return;
    this.#items.length = 0;
    this.fail(error);
  }

  /** Items queued and not taken yet (a producer bounds a slow consumer with it). */
  get size(): number {
    return this.#items.length;
  }

  /** True once `end`/`fail`/`return` happened. */
  get closed(): boolean {
    return this.#done;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift() as T, done: false });
    if (this.#done) {
      if (this.#error !== undefined) {
        const { error } = this.#error;
        this.#error = undefined;
        return Promise.reject(error);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    if (this.#waiter !== undefined) return Promise.reject(new Error('AsyncQueue supports one consumer at a time'));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<T>> {
    const wasOpen = !this.#done;
    this.#items.length = 0;
    this.#error = undefined;
    this.end();
    if (wasOpen) this.#onReturn?.();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
