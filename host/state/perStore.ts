import type { Store } from './store.js';

/**
 * `make(store)` computed once per store and kept while the store lives: statements a hot read prepares once (SQLite
 * compiling the same SQL on every call was the largest cost of some reads), not again per call.
 */
export function perStore<T>(make: (store: Store) => T): (store: Store) => T {
  const made = new WeakMap<Store, T>();
  return (store) => {
    let value = made.get(store);
    if (value === undefined) made.set(store, (value = make(store)));
    return value;
  };
}
