// The host request table (host/runs/hostRequestTable.ts): one entry per granted method the host
// implements, answered by the real state store, path policy and gateway (scripted model); a
// method without an entry answers NotSupported exactly as the old fallback chain did.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../sdk/protocol/errorCodes.js';
import { HOST_METHOD_NAMES, type HostMethodName } from '../../../sdk/protocol/methods.js';
import { RpcError } from '../../../sdk/protocol/rpcError.js';
import { openScriptedRun } from '../../../host/gateway/scriptedRun.js';
import type { GatewayRunHandle } from '../../../host/gateway/gateway.js';
import { unsupportedHostRequests, type HostRequestScope } from '../../../host/rpc/hostRequestHandler.js';
import { RunPolicy, type ApprovalPort } from '../../../host/policy/runPolicy.js';
import { hostRequestTable, tableHandler, type HostRequestSources } from '../../../host/runs/hostRequestTable.js';
import { tempHost } from '../../helpers/host.js';

const host = tempHost();
const handles: GatewayRunHandle[] = [];
afterAll(async () => {
  for (const h of handles) await h.close();
  await host.close();
});

const scope: HostRequestScope = {
  runId: 'run_table-test-0001',
  signal: new AbortController().signal,
  notify: () => undefined,
};
const workspaceRoot = mkdtempSync(join(tmpdir(), 'paddock-table-'));
writeFileSync(join(workspaceRoot, 'hello.txt'), 'hello table');

/**
 * The run's policy over a stand-in port (a fake, named so: no store behind it; the flow with the store is tested in
 * test/integration/approvals.test.ts). approvalPolicy deny: nothing waits for a person here.
 */
const standInPort: ApprovalPort = {
  liveGrants: () => [],
  useOnceGrant: () => false,
  request: () => {
    throw new Error('no approval is asked in this test');
  },
  state: () => undefined,
  expire: () => undefined,
  void: () => undefined,
  decided: () => undefined,
  tainted: () => undefined,
  containsSecret: () => false,
  learnSecret: () => undefined,
  watchKnown: () => () => false,
};
const policy = new RunPolicy(
  {
    tenant: 'default',
    bindingId: 'table',
    sessionId: 's1',
    runId: 'run_table-test-0001',
    goalRevision: 0,
    runnerId: 'table-test',
    sandbox: 'weak',
    workspaceRoot,
    rules: [],
    approvalPolicy: 'deny',
    timeoutMs: 60_000,
    networkAllow: [],
  },
  standInPort,
);

const sources = (hostRequests: HostMethodName[], handle?: GatewayRunHandle): HostRequestSources => ({
  access: { hostRequests },
  state: { repo: host.store.runnerState, scope: 'binding:table/session:s1' },
  workspaceRoot,
  gateway: { gateway: host.gateway, handle },
  policy,
  runnerId: 'table-test',
});

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof RpcError ? e.code : `not an RpcError: ${String(e)}`),
  );

describe('hostRequestTable', () => {
  it('has an entry for each granted method the host implements, and nothing else', async () => {
    const handle = await openScriptedRun(host.gateway, 'run_table-entries-01');
    handles.push(handle);
    const all = hostRequestTable(sources([...HOST_METHOD_NAMES], handle));
    // Every host method is implemented now (approvals included): all of them, when all are granted.
    expect(Object.keys(all).sort()).toEqual([...HOST_METHOD_NAMES].sort());
    expect(Object.keys(hostRequestTable(sources(['state/get', 'fs/read'], handle))).sort()).toEqual([
      'fs/read',
      'state/get',
    ]);
    // No gateway for the run (nothing granted through it): no gateway entries, even if listed.
    expect(Object.keys(hostRequestTable(sources(['model/complete', 'tool/call', 'state/set'])))).toEqual(['state/set']);
  });

  it(
    'answers state from the store in the run scope, fs through ' + 'the path policy, models through the gateway',
    async () => {
      const handle = await openScriptedRun(host.gateway, 'run_table-answers-1');
      handles.push(handle);
      const handler = tableHandler(
        hostRequestTable(
          sources(['state/get', 'state/set', 'state/delete', 'fs/read', 'fs/write', 'model/complete'], handle),
        ),
      );
      expect(await handler.handle('state/set', { runId: scope.runId, key: 'k', value: { n: 1 } }, scope)).toEqual({});
      expect(host.store.runnerState.get('binding:table/session:s1', 'k')).toEqual({ found: true, value: { n: 1 } });
      expect(await handler.handle('state/get', { runId: scope.runId, key: 'k' }, scope)).toEqual({
        found: true,
        value: { n: 1 },
      });
      expect(await handler.handle('state/delete', { runId: scope.runId, key: 'k' }, scope)).toEqual({ deleted: true });
      expect(await handler.handle('fs/read', { runId: scope.runId, path: 'hello.txt' }, scope)).toMatchObject({
        content: 'hello table',
        encoding: 'utf8',
      });
      expect(await handler.handle('fs/write', { runId: scope.runId, path: 'out.txt', content: 'x' }, scope)).toEqual({
        bytesWritten: 1,
      });
      await expect(handler.handle('fs/read', { runId: scope.runId, path: '../escape' }, scope)).rejects.toMatchObject({
        code: ErrorCodes.PolicyDenied,
        data: { deniedBy: 'pathPolicy.outside' },
      });
      const reply = (await handler.handle(
        'model/complete',
        { runId: scope.runId, model: 'sm', messages: [{ role: 'user', content: 'SAY:from-the-table' }], maxTokens: 20 },
        scope,
      )) as { message: { content: { text: string }[] } };
      expect(reply.message.content[0]!.text).toContain('from-the-table');
    },
  );

  it('a method without an entry fails like the old chain: NotSupported, "not supported by this host yet"', async () => {
    const handler = tableHandler(hostRequestTable(sources(['state/get', 'model/complete'])));
    for (const method of ['approval/request', 'model/complete', 'fs/write', 'kb/retrieve'] as HostMethodName[]) {
      const ours = await handler.handle(method, { runId: scope.runId }, scope).catch((e: unknown) => e as RpcError);
      const old = (await unsupportedHostRequests
        .handle(method, { runId: scope.runId }, scope)
        .catch((e: unknown) => e)) as RpcError;
      expect(ours).toBeInstanceOf(RpcError);
      expect({
        code: (ours as RpcError).code,
        message: (ours as RpcError).message,
        data: (ours as RpcError).data,
      }).toEqual({ code: old.code, message: old.message, data: old.data });
      expect((ours as RpcError).code).toBe(ErrorCodes.NotSupported);
    }
  });

  it("approval/request is answered by the run's policy, fs requests pass through it", async () => {
    const handler = tableHandler(hostRequestTable(sources(['approval/request', 'fs/read'])));
    const ask = (effect: string, target: string) =>
      handler.handle('approval/request', { runId: scope.runId, action: { effect, target, summary: 's' } }, scope);
    expect(await ask('fs.read', 'hello.txt')).toMatchObject({ decision: 'approved', decidedBy: 'host default' });
    expect(await ask('exec', 'make')).toMatchObject({
      decision: 'denied',
      reason: expect.stringMatching(/approvalPolicy/),
    });
    // A secret path is credential: asked, so denied here (approvalPolicy deny), naming who denied it.
    await expect(handler.handle('fs/read', { runId: scope.runId, path: '.env' }, scope)).rejects.toMatchObject({
      code: ErrorCodes.PolicyDenied,
      data: { deniedBy: 'host default' },
    });
  });

  it('a method name from the prototype chain is not an entry', async () => {
    const handler = tableHandler(hostRequestTable(sources(['state/get'])));
    expect(await codeOf(handler.handle('constructor' as HostMethodName, {}, scope))).toBe(ErrorCodes.NotSupported);
    expect(await codeOf(handler.handle('__proto__' as HostMethodName, {}, scope))).toBe(ErrorCodes.NotSupported);
  });
});
