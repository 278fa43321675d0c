// The one module that imports tsyringe; reflect-metadata must load before it (tsyringe checks).
import 'reflect-metadata';
import {
  container,
  inject,
  injectable as tsyringeInjectable,
  instanceCachingFactory,
  type InjectionToken,
} from 'tsyringe';

export { container, inject, instanceCachingFactory, type InjectionToken };

type Constructor = abstract new (...args: never[]) => unknown;

/**
 * tsyringe's `injectable()`, guarded: fails when the class is defined if any constructor
 * parameter lacks an explicit `@inject(TOKEN)`. Without decorator metadata (tsx/esbuild emit
 * none) such a parameter would silently receive `undefined`. Reads tsyringe 4.10's internal
 * "injectionTokens" metadata key, which is why tsyringe is pinned exactly.
 */
export function injectable(): (target: Constructor) => void {
  return (target) => {
    const tokens = (Reflect.getOwnMetadata('injectionTokens', target) ?? {}) as Record<number, unknown>;
    for (let index = 0; index < target.length; index++) {
      if (tokens[index] === undefined) {
        throw new TypeError(`${target.name}: constructor parameter #${index} has no @inject(TOKEN)`);
      }
    }
    tsyringeInjectable()(target as never);
  };
}
