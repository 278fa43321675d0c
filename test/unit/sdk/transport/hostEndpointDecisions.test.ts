// The decision the endpoint reports for each runner → host request (sdk/transport/hostEndpoint.ts,
// issue 12 finding 8): once, from the handler's real outcome — a refusal it throws (an RpcError
// with data.deniedBy) is a denial like the endpoint's own; an answer or a failure that is not a
// refusal is `accepted`; a request still in flight when the run ends is settled by
// settleHostRequests. The runner side is plain JSON-RPC lines fed to the endpoint's peer.
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../../sdk/protocol/errorCodes.js';
import { RpcError } from '../../../../sdk/protocol/rpcError.js';
import { buildRunParams, textEvent } from '../../../../sdk/protocol/runParams.js';
import { HostEndpoint } from '../../../../sdk/transport/hostEndpoint.js';
import type { HostRequestHandler } from '../../../../sdk/transport/hostEndpoint.js';

const RUN_ID = 'run_00000000-0000-4000-8000-00000000d001';

function endpoint(handle: HostRequestHandler['handle']) {
  const decisions: { method: string; verdict: string }[] = [];
  const answers = new Map<number, unknown>();
  const conn = new HostEndpoint({
    send: (line) => {
      const msg = JSON.parse(line) as { id?: number; result?: unknown; error?: unknown; method?: string };
      if (msg.method === undefined && typeof msg.id === 'number') answers.set(msg.id, msg.error ?? msg.result);
    },
    onViolation: (v) => {
      throw new Error(`violation: ${v.reason}`);
    },
    onUpdate: () => undefined,
    onHostRequest: (method, _runId, verdict) =>
      decisions.push({ method, verdict: verdict === 'accepted' ? 'accepted' : `${verdict.code}:${verdict.deniedBy}` }),
    hostRequests: { handle },
    host: { name: 'test', version: '0' },
  });
  void conn
    .run(
      buildRunParams({
        runId: RUN_ID,
        sessionId: 'ses_1',
        event: textEvent('hi'),
        binding: { bindingId: 'b', runner: { id: 'r' }, hostRequests: ['fs/read', 'fs/write', 'state/set'] },
        wallClockMs: 60_000,
      }),
    )
    .catch(() => undefined);
  let id = 100;
  const request = async (method: string, params: Record<string, unknown>) => {
    const mine = ++id;
    conn.peer.receiveLine(JSON.stringify({ jsonrpc: '2.0', id: mine, method, params: { runId: RUN_ID, ...params } }));
    for (let i = 0; i < 50 && !answers.has(mine); i++) await new Promise((r) => setImmediate(r));
    return answers.get(mine);
  };
  return { conn, decisions, request, answers };
}

describe('HostEndpoint records the real outcome of each host request, once', () => {
  it('a denial thrown by the handler is the decision; other errors and answers are accepted', async () => {
    const { decisions, request } = endpoint(async (method, params) => {
      if (params.path === 'link') throw RpcError.policyDenied('a link', { deniedBy: 'pathPolicy.symlink', method });
      if (params.path === 'missing') throw new RpcError(ErrorCodes.NotFound, 'missing');
      if (method === 'state/set')
        throw new RpcError(ErrorCodes.QuotaExceeded, 'big', { deniedBy: 'state.maxValueBytes' });
      return { content: 'x', encoding: 'utf8', size: 1, truncated: false };
    });
    await request('fs/read', { path: 'link' });
    await request('fs/read', { path: 'missing' });
    await request('fs/read', { path: 'ok' });
    await request('state/set', { key: 'k', value: 1 });
    await request('model/complete', { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(decisions).toEqual([
      { method: 'fs/read', verdict: `${ErrorCodes.PolicyDenied}:pathPolicy.symlink` },
      { method: 'fs/read', verdict: 'accepted' },
      { method: 'fs/read', verdict: 'accepted' },
      { method: 'state/set', verdict: `${ErrorCodes.QuotaExceeded}:state.maxValueBytes` },
      // The endpoint's own refusal (not granted), recorded at once, the handler never called.
      { method: 'model/complete', verdict: `${ErrorCodes.PolicyDenied}:binding.hostRequests` },
    ]);
  });

  it('in flight at run end: a late denial is still the decision; one that never settles is accepted once', async () => {
    let refuseLate!: () => void;
    const { conn, decisions, request } = endpoint(
      (method, params) =>
        new Promise((_resolve, reject) => {
          if (params.path === 'late')
            refuseLate = () => reject(RpcError.policyDenied('late', { deniedBy: 'pathPolicy.outside', method }));
          // 'never' never settles.
        }),
    );
    void request('fs/read', { path: 'late' });
    void request('fs/write', { path: 'never', content: '' });
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    expect(decisions).toEqual([]);
    conn.endRun();
    const settling = conn.settleHostRequests(200);
    refuseLate();
    await settling;
    expect(decisions).toEqual([
      { method: 'fs/read', verdict: `${ErrorCodes.PolicyDenied}:pathPolicy.outside` },
      { method: 'fs/write', verdict: 'accepted' },
    ]);
    await conn.settleHostRequests(10);
    expect(decisions).toHaveLength(2);
  });
});
