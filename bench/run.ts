// npm run bench — prints figures, baselines and method; writes bench/results/latest.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { auditVerifyBench } from './auditVerify.js';
import { cliBench } from './cli.js';
import { consoleBench } from './console.js';
import { coldStart } from './coldStart.js';
import { dispatchBench } from './dispatch.js';
import { dispatchHttpBench } from './dispatchHttp.js';
import { gatewayBench } from './gateway.js';
import { manyRunsBench } from './manyRuns.js';
import { spawnCostBench } from './spawnCost.js';
import { metricsBench } from './metrics.js';
import { outboundScanBench } from './outboundScan.js';
import { packageVerifyBench } from './packageVerify.js';
import { claimLocksBench } from './claimLocks.js';
import { pgAppendBench } from './pgAppend.js';
import { pgBridgeBench } from './pgBridge.js';
import { recoveryTimeBench } from './recoveryTime.js';
import { clusterHostsBench } from './clusterHosts.js';
import { redactorBench } from './redactor.js';
import { harnessBench } from './harnessTurn.js';
import { sandboxBench } from './sandbox.js';
import { sseBench } from './sse.js';
import { sseCatchupBench } from './sseCatchup.js';
import { roundTrip } from './roundTrip.js';
import { stateBench } from './state.js';
import { tenantReadsBench } from './tenantReads.js';
import { streamBench } from './stream.js';
import { throughput } from './throughput.js';
import { warmStartBench } from './warmStart.js';

console.log(`# paddock benchmarks — ${new Date().toISOString()}`);
console.log(`node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`);
const only = process.argv[2];
const results = {
  ...(only && only !== 'process'
    ? {}
    : {
        cold: await coldStart(),
        throughput: await throughput(),
        roundTrip: await roundTrip(),
      }),
  ...(only && only !== 'process' && only !== 'stream' ? {} : { stream: await streamBench() }),
  ...(only && only !== 'state' ? {} : { state: await stateBench() }),
  ...(only && only !== 'audit-verify' ? {} : { auditVerify: await auditVerifyBench() }),
  ...(only && only !== 'dispatch' ? {} : { dispatch: await dispatchBench() }),
  ...(only && only !== 'sandbox' ? {} : { sandbox: await sandboxBench() }),
  ...(only && only !== 'gateway' ? {} : { gateway: await gatewayBench() }),
  ...(only && only !== 'harness' ? {} : { harness: await harnessBench() }),
  ...(only && only !== 'cli' ? {} : { cli: await cliBench() }),
  ...(only && only !== 'metrics' ? {} : { metrics: await metricsBench() }),
  ...(only && only !== 'sse' ? {} : { sse: await sseBench() }),
  ...(only && only !== 'sse-catchup' ? {} : { sseCatchup: await sseCatchupBench() }),
  ...(only && only !== 'dispatch-http' ? {} : { dispatchHttp: await dispatchHttpBench() }),
  ...(only && only !== 'tenant-reads' ? {} : { tenantReads: await tenantReadsBench() }),
  ...(only && only !== 'outbound' ? {} : { outbound: await outboundScanBench() }),
  ...(only && only !== 'console' ? {} : { console: await consoleBench() }),
  ...(only && only !== 'warm-start' ? {} : { warmStart: await warmStartBench() }),
  ...(only && only !== 'redactor' ? {} : { redactor: await redactorBench() }),
  ...(only && only !== 'recovery-time' ? {} : { recoveryTime: await recoveryTimeBench() }),
  ...(only && only !== 'cluster-hosts' ? {} : { clusterHosts: await clusterHostsBench() }),

  ...(only && only !== 'many-runs' && only !== 'spawn-cost' ? {} : { spawnCost: await spawnCostBench() }),
  ...(only && only !== 'many-runs' ? {} : { manyRuns: await manyRunsBench() }),
  ...(only && only !== 'package-verify' ? {} : { packageVerify: await packageVerifyBench() }),
  ...(only && only !== 'pg-bridge' ? {} : { pgBridge: await pgBridgeBench() }),
  ...(only && only !== 'pg-append' ? {} : { pgAppend: await pgAppendBench() }),
  ...(only && only !== 'claim-locks' ? {} : { claimLocks: await claimLocksBench() }),
};
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/latest.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
process.exit(0);
