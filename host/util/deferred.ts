/** A promise with its resolve function (Promise.withResolvers needs Node 22). */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

/** Make a {@link Deferred}. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolve true if `promise` settles within `ms`, false otherwise; the timer never outlives it. */
export function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    promise.then(done, done);
  });
}
