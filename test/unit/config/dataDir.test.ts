import { describe, expect, it } from 'vitest';
import { resolveDataDir } from '../../../host/config/dataDir.js';

describe('resolveDataDir', () => {
  it('takes --data-dir, else PADDOCK_HOME, else ./.paddock, resolved against the working directory', () => {
    expect(resolveDataDir('data', { PADDOCK_HOME: '/srv/p' }, '/w')).toBe('/w/data');
    expect(resolveDataDir(undefined, { PADDOCK_HOME: '/srv/p' }, '/w')).toBe('/srv/p');
    expect(resolveDataDir(undefined, {}, '/w')).toBe('/w/.paddock');
  });

  it('an empty PADDOCK_HOME counts as unset: the working directory never becomes the data folder', () => {
    expect(resolveDataDir(undefined, { PADDOCK_HOME: '' }, '/w')).toBe('/w/.paddock');
  });

  it('an empty --data-dir is refused, naming the option', () => {
    expect(() => resolveDataDir('', {}, '/w')).toThrow(/--data-dir: the value is empty/);
  });
});
