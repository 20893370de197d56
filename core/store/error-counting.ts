import type { Store } from './types.js';

/** Methods of a Store that return promises, i.e. that can fail. */
type StoreOperation = { [K in keyof Store]: Store[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof Store];

/**
 * The same store, calling `onError(operation)` whenever a command's promise rejects (the
 * error still reaches the caller unchanged). Feeds `svc_store_errors_total` without each
 * caller having to remember to count; `operation` is the method name, a bounded label.
 */
export function countStoreErrors(store: Store, onError: (operation: StoreOperation) => void): Store {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'constructor') return value;
      let wrapper = wrapped.get(property);
      if (!wrapper) {
        const method = value as (...args: unknown[]) => unknown;
        wrapper = (...args: unknown[]) => {
          const result = method.apply(target, args);
          if (!(result instanceof Promise)) return result;
          return result.catch((error: unknown) => {
            onError(property as StoreOperation);
            throw error;
          });
        };
        wrapped.set(property, wrapper);
      }
      return wrapper;
    },
  });
}
