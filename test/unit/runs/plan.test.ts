// The one planning path (host/runs/plan.ts): a dispatched event and an ad-hoc run go through the
// same rules and give the same refusal codes. The machine is a fake report (a machine without
// bwrap, cgroups or loop devices cannot be made on demand); everything else is real (store,
// config repository, runner catalog, redactor).
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyConfig } from '../../../host/bindings/apply.js';
import { HostError } from '../../../host/errors.js';
import { BuiltinVerifier } from '../../../host/packages/builtinDigests.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { BUILTIN_RUNNERS_DIR } from '../../../host/plugins/resolveRunner.js';
import { planRun, type PlanDeps, type PlanRequest } from '../../../host/runs/plan.js';
import { probeMachine, type MachineReport } from '../../../host/sandbox/probe.js';
import { Redactor } from '../../../host/secrets/redactor.js';
import { repoPath } from '../../helpers/fixtures.js';
import { chatEvent, tempHost } from '../../helpers/host.js';

const host = tempHost();
afterAll(() => host.close());

const real = probeMachine();
/** Fake machine reports: what this machine cannot be made to lack on demand. */
const FAKE_NO_BWRAP: MachineReport = { ...real, bwrap: { available: false, why: 'fake: bwrap is not installed' } };
const FAKE_NO_CGROUPS: MachineReport = {
  ...real,
  cgroups: { ...real.cgroups, memory: undefined, pids: undefined, why: 'fake: no cgroup controller' },
};
/** A fake machine that can enforce everything (so the tests do not depend on this host's mechanisms). */
const FAKE_FULL: MachineReport = {
  ...real,
  bwrap: { available: true, path: '/usr/bin/bwrap' },
  cgroups: { ...real.cgroups, memory: 'fake', pids: 'fake' },
  diskQuota: { ...real.diskQuota, available: true },
};

const deps = (machine: MachineReport, over: Partial<PlanDeps> = {}): PlanDeps => ({
  config: host.config,
  store: host.store,
  redactor: host.redactor,
  machine: () => machine,
  ...over,
});

host.apply({
  resources: {
    models: [
      { id: 'sm', provider: 'scripted', model: 'scripted-1' },
      { id: 'keyed', provider: 'anthropic', model: 'claude', apiKey: { env: 'PADDOCK_PLAN_TEST_KEY' } },
    ],
  },
  bindings: [
    { id: 'p-bwrap', runner: 'echo', route: { bot: 'p-bwrap' }, sandbox: 'bwrap' },
    { id: 'p-process', runner: 'echo', route: { bot: 'p-process' }, sandbox: 'process' },
    { id: 'p-degrade', runner: 'echo', route: { bot: 'p-degrade' }, sandbox: 'bwrap', allowDegrade: true },
    { id: 'p-off', runner: 'echo', route: { bot: 'p-off' }, sandbox: 'process', enabled: false },
    { id: 'p-config', runner: 'echo', route: { bot: 'p-config' }, sandbox: 'process', config: { delayMs: 5 } },
    {
      id: 'p-counter',
      runner: 'increments-state-counter',
      route: { bot: 'p-counter' },
      sandbox: 'process',
      grants: { state: 'session' },
    },
    {
      id: 'p-models',
      runner: 'calls-gateway',
      route: { bot: 'p-models' },
      sandbox: 'process',
      grants: { models: ['sm', 'keyed'] },
    },
  ],
});

const dispatched = (bot: string): PlanRequest => ({
  kind: 'dispatch',
  tenant: 'default',
  event: chatEvent({ bot }) as never,
});
const refusal = (fn: () => unknown): HostError => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HostError);
    return error as HostError;
  }
  throw new Error('expected a refusal');
};

describe('planRun: dispatched and ad-hoc runs, one set of rules', () => {
  it.each([
    ['dispatched', dispatched('p-bwrap')],
    ['ad-hoc', { kind: 'adhoc', runner: 'echo', sandbox: 'bwrap' } as PlanRequest],
  ])(
    '%s: bwrap asked on a machine without it is refused as sandbox_unavailable (not a plain Error)',
    (_kind, request) => {
      const error = refusal(() => planRun(deps(FAKE_NO_BWRAP), request));
      expect(error.code).toBe('RUN_REFUSED');
      expect(error.data.reason).toBe('sandbox_unavailable');
      expect(error.message).toMatch(
        /asks for the bwrap sandbox, which this host cannot run \(fake: bwrap is not installed\); refusing/,
      );
    },
  );

  it.each([
    ['dispatched', dispatched('p-process')],
    ['ad-hoc', { kind: 'adhoc', runner: 'echo' } as PlanRequest],
  ])('%s: a limit this machine cannot enforce is refused as limits_unavailable', (_kind, request) => {
    const error = refusal(() => planRun(deps(FAKE_NO_CGROUPS), request));
    expect(error.data.reason).toBe('limits_unavailable');
    expect(error.message).toMatch(/cannot enforce the memory and pids limit/);
  });

  it.each([
    ['dispatched', dispatched('p-degrade')],
    ['ad-hoc', { kind: 'adhoc', runner: 'echo', sandbox: 'bwrap', allowDegrade: true } as PlanRequest],
  ])(
    '%s: allowed to degrade, the run goes ahead on the process backend and says what was given up',
    (_kind, request) => {
      const plan = planRun(deps(FAKE_NO_BWRAP), request);
      expect(plan.binding.sandbox).toBe('process');
      expect(plan.sandbox).toEqual({
        asked: 'bwrap',
        degraded: [expect.stringContaining('bwrap unavailable (fake: bwrap is not installed)')],
      });
    },
  );

  it(
    'dispatched: the binding config is validated again and its defaults filled; invalid → config_invalid naming ' +
      'the field',
    async () => {
      expect(planRun(deps(FAKE_FULL), dispatched('p-config')).binding.config).toEqual({ delayMs: 5, prefix: '' });
      // The runner's schema changed since apply: the same runner, its folder now with a stricter schema.
      const runnerDir = (maximum: number) => {
        const base = mkdtempSync(join(tmpdir(), 'paddock-plan-runners-'));
        mkdirSync(join(base, 'schema-runner'));
        const manifest = JSON.parse(readFileSync(repoPath('runners/echo/runner.json'), 'utf8')) as {
          id: string;
          configSchema: { properties: Record<string, unknown> };
        };
        manifest.id = 'schema-runner';
        manifest.configSchema.properties.delayMs = { type: 'integer', maximum };
        writeFileSync(join(base, 'schema-runner', 'runner.json'), JSON.stringify(manifest));
        writeFileSync(join(base, 'schema-runner', 'index.ts'), '');
        return base;
      };
      const before = runnerDir(100);
      // Its own host: the binding names a runner only these folders have.
      const own = tempHost();
      const ownDeps = (runnerDirs: string[]): PlanDeps => ({
        ...deps(FAKE_FULL),
        store: own.store,
        config: { ...own.config, runnerDirs },
      });
      applyConfig(
        own.store,
        {
          bindings: [
            {
              id: 'p-schema',
              runner: 'schema-runner',
              route: { bot: 'p-schema' },
              sandbox: 'process',
              config: { delayMs: 5 },
            },
          ],
        },
        { catalog: discoverRunners([before]), mountRoots: [], redactor: host.redactor },
        { by: 'user:test' },
      );
      expect(planRun(ownDeps([before]), dispatched('p-schema')).binding.config).toEqual({ delayMs: 5, prefix: '' });
      const stricter = runnerDir(1);
      const error = refusal(() => planRun(ownDeps([stricter]), dispatched('p-schema')));
      expect(error.code).toBe('RUN_REFUSED');
      expect(error.data).toEqual({ reason: 'config_invalid', bindingId: 'p-schema', field: 'config.delayMs' });
      expect(error.message).toMatch(/config\.delayMs: .*\(the runner's config schema changed\?\)/);
      await own.close();
    },
  );

  it('ad-hoc: the config goes to the runner as given (its own validation answers, as a failed run)', () => {
    expect(
      planRun(deps(FAKE_FULL), { kind: 'adhoc', runner: 'echo', config: { delayMs: 'soon' } }).binding.config,
    ).toEqual({ delayMs: 'soon' });
  });

  it('dispatched: no binding routes the event → no_binding; a disabled binding → binding_disabled', () => {
    expect(refusal(() => planRun(deps(FAKE_FULL), dispatched('nobody'))).data).toMatchObject({ reason: 'no_binding' });
    expect(refusal(() => planRun(deps(FAKE_FULL), dispatched('p-off'))).data).toMatchObject({
      reason: 'binding_disabled',
      bindingId: 'p-off',
    });
  });

  it(
    'dispatched: a runner no longer installed is refused as runner_unavailable; ad-hoc keeps the resolver error ' +
      'naming the runner',
    () => {
      const gone = { ...host.config, runnerDirs: [] };
      // `increments-state-counter` is a fixture runner: with no runner folders configured it is not installed any more.
      const error = refusal(() => planRun(deps(FAKE_FULL, { config: gone }), dispatched('p-counter')));
      expect(error.data).toMatchObject({ reason: 'runner_unavailable', bindingId: 'p-counter' });
      expect(error.message).toMatch(/runner "increments-state-counter" is not installed/);
      expect(
        refusal(() => planRun(deps(FAKE_FULL, { config: gone }), { kind: 'adhoc', runner: 'increments-state-counter' }))
          .code,
      ).toBe('RUNNER_NOT_FOUND');
    },
  );

  it('the sandbox is decided before the runner is looked at, for both (same order of rules)', () => {
    const gone = { ...host.config, runnerDirs: [] };
    host.apply({
      bindings: [{ id: 'p-order', runner: 'increments-state-counter', route: { bot: 'p-order' }, sandbox: 'bwrap' }],
    });
    expect(refusal(() => planRun(deps(FAKE_NO_BWRAP, { config: gone }), dispatched('p-order'))).data.reason).toBe(
      'sandbox_unavailable',
    );
  });

  it(
    'grants: a dispatched run gets its binding ∩ manifest; an ad-hoc run what its manifest asks (state per ' +
      'session)',
    () => {
      const d = planRun(deps(FAKE_FULL), dispatched('p-counter'));
      const a = planRun(deps(FAKE_FULL), { kind: 'adhoc', runner: 'increments-state-counter' });
      expect(d.access.hostRequests).toEqual(['state/get', 'state/set']);
      expect(a.access.hostRequests).toEqual(d.access.hostRequests);
      expect(a.access.state).toBe('session');
      expect(a.binding.id).toBe('adhoc-increments-state-counter');
      expect(a.access.models).toEqual([]);
    },
  );

  it('dispatched: the secrets its resources reference are known to the redactor before the run', () => {
    const secret = 'plan-canary-value-quartz-falcon';
    process.env.PADDOCK_PLAN_TEST_KEY = secret;
    try {
      const redactor = new Redactor();
      expect(redactor.text(`key ${secret}`)).toContain(secret);
      const plan = planRun(deps(FAKE_FULL, { redactor }), dispatched('p-models'));
      expect(plan.access.models.map((m) => m.id)).toEqual(['sm', 'keyed']);
      expect(redactor.text(`key ${secret}`)).not.toContain(secret);
    } finally {
      delete process.env.PADDOCK_PLAN_TEST_KEY;
    }
  });

  it(
    'RunService.runAdHoc: --sandbox bwrap on a machine without bwrap is refused as sandbox_unavailable, nothing ' +
      'queued',
    async () => {
      // This host has bwrap; point the host at a bwrap that does not exist (the same switch as the dispatch test).
      process.env.PADDOCK_BWRAP = '/nonexistent/bwrap';
      probeMachine(true);
      try {
        const before = host.store.audit.records().length;
        const error = await host.runs
          .runAdHoc({ runner: 'echo', event: chatEvent() as never, sandbox: 'bwrap' })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(HostError);
        expect((error as HostError).code).toBe('RUN_REFUSED');
        expect((error as HostError).data).toEqual({ reason: 'sandbox_unavailable', bindingId: 'adhoc-echo' });
        expect((error as Error).message).toMatch(
          /asks for the bwrap sandbox, which this host cannot run \(PADDOCK_BWRAP=\/nonexistent\/bwrap/,
        );
        expect(
          host.store.audit
            .records()
            .slice(before)
            .map((r) => r.type),
        ).toEqual([]);
      } finally {
        delete process.env.PADDOCK_BWRAP;
        probeMachine(true);
      }
    },
  );
});

describe('planRun: a built-in runner is checked against the build before its run', () => {
  // A real verifier over a copy of the built-in runners with the build's record (dist/runner-digests.json): the
  // copy is edited, the host's own runners/ never is.
  const copy = mkdtempSync(join(tmpdir(), 'paddock-builtin-copy-'));
  cpSync(BUILTIN_RUNNERS_DIR, copy, { recursive: true });
  const verifier = new BuiltinVerifier(copy);
  const verifyCopy = (dir: string) => verifier.verify(join(copy, basename(dir)));

  it.each([
    ['dispatched', dispatched('p-process')],
    ['ad-hoc', { kind: 'adhoc', runner: 'echo' } as PlanRequest],
  ])('%s: unchanged, the run is planned; one edited byte is runner_tampered, audited once', (_kind, request) => {
    expect(planRun(deps(FAKE_FULL, { verifyBuiltin: verifyCopy }), request).runner.manifest.id).toBe('echo');
    const file = join(copy, 'echo', 'runner.json');
    const before = readFileSync(file);
    writeFileSync(file, Buffer.concat([before, Buffer.from(' ')]));
    try {
      const audited = () => host.store.audit.records({ types: ['runner.tampered'] }).filter((r) => r.data.builtin);
      const known = audited().length;
      const error = refusal(() => planRun(deps(FAKE_FULL, { verifyBuiltin: verifyCopy }), request));
      expect(error.data).toMatchObject({ reason: 'runner_tampered', runner: 'echo', changed: ['runner.json'] });
      expect(error.message).toContain('built-in runner "echo": changed since the build: runner.json');
      refusal(() => planRun(deps(FAKE_FULL, { verifyBuiltin: verifyCopy }), request));
      // One record per runner and process: the first refusal of this process audited it.
      expect(audited().length).toBe(Math.min(known + 1, 1));
      expect(audited()[0]!.data).toMatchObject({ runner: 'echo', builtin: true });
    } finally {
      writeFileSync(file, before);
    }
  });
});
