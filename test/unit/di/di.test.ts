import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLimits } from '../../../host/config/limits.js';
import { ALL_TOKENS, configureContainer } from '../../../host/di/configure.js';
import { inject, injectable } from '../../../host/di/container.js';
import { TOKENS } from '../../../host/di/tokens.js';

const config = {
  dataDir: mkdtempSync(join(tmpdir(), 'paddock-di-')),
  limits: parseLimits(),
  runnerDirs: [],
  logLevel: 'silent',
  keepWorkspaces: false,
};

describe('dependency injection', () => {
  it('the composition root resolves every token', () => {
    const container = configureContainer(config);
    for (const token of ALL_TOKENS) expect(container.resolve(token), String(token)).toBeDefined();
    expect(container.resolve(TOKENS.HostConfig)).toBe(config);
  });

  it('a child container takes a fake with useValue', () => {
    const container = configureContainer(config);
    const child = container.createChildContainer();
    const fake = { level: 'fake' };
    child.register(TOKENS.Logger, { useValue: fake as never });
    expect(child.resolve(TOKENS.Logger)).toBe(fake);
  });

  it('injectable() refuses a constructor parameter without an @inject token at definition time', () => {
    const define = () => {
      @injectable()
      class Broken {
        constructor(
          @inject(TOKENS.Logger) readonly log: unknown,
          readonly forgotten: unknown,
        ) {}
      }
      return Broken;
    };
    expect(define).toThrow(/Broken: constructor parameter #1 has no @inject\(TOKEN\)/);
  });
});
