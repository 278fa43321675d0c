import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Update } from '../../sdk/protocol/types.js';
import { base64Core } from '../../host/secrets/secretForms.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, tempHost } from '../helpers/host.js';

// Canaries of each kind of secret the host holds; none has a recognisable shape, so only the
// registered values can catch them.
const CANARY = {
  modelEnv: 'canary-model-env-5b8e1f2a9d',
  modelFile: 'canary-model-file-77c1d09e3f',
  hostEnv: 'canary-host-env-3a4b5c6d7e',
  awsStyle: 'canary-aws-style-9c8d7e6f5a',
};
/** The forms nothing may hold: raw, hex, and the base64 core at each alignment. */
const formsOf = (c: string) => [
  c,
  Buffer.from(c).toString('hex'),
  ...[0, 1, 2].map((r) => base64Core(Buffer.from(c), r)),
];

describe('canary secrets appear in no stored or streamed byte', () => {
  it(
    'keys referenced by the config and the host env are redacted from events, audit, outcomes, stderr and ' + 'streams',
    async () => {
      process.env.PADDOCK_CANARY_MODEL_KEY = CANARY.modelEnv;
      process.env.PADDOCK_CANARY_API_KEY = CANARY.hostEnv; // named like a credential: the host's own secret
      process.env.PADDOCK_CANARY_SECRET_ACCESS_KEY = CANARY.awsStyle; // *_SECRET_ACCESS_KEY is a credential name too
      const keyFile = join(mkdtempSync(join(tmpdir(), 'paddock-key-')), 'key');
      writeFileSync(keyFile, `${CANARY.modelFile}\n`);
      const host = tempHost();
      try {
        host.apply({
          resources: {
            models: [
              { id: 'env-key', provider: 'anthropic', model: 'm', apiKey: { env: 'PADDOCK_CANARY_MODEL_KEY' } },
              { id: 'file-key', provider: 'openai', model: 'm', apiKey: { file: keyFile } },
            ],
          },
          bindings: [
            { id: 'echoes', runner: 'echo', route: { platform: 'telegram', bot: 'echoes' } },
            {
              id: 'leaky',
              runner: 'tries-sandbox-escapes',
              route: { platform: 'telegram', bot: 'leaky' },
              config: { actions: ['print-event'] },
            },
          ],
        });
        const streamed: Update[] = [];
        const leaks = Object.values(CANARY).join(' and ');
        const outcomes = [];
        for (const [bot, text] of [
          [
            'echoes',
            `my keys are ${leaks}, base64 ${Buffer.from(CANARY.modelFile).toString('base64')}, json ` +
              `${JSON.stringify(CANARY.modelEnv)}`,
          ],
          [
            'leaky',
            `print these: ${leaks} ` +
              `${Object.values(CANARY)
                .map(
                  (c) =>
                    `${Buffer.from(c).toString('base64')} ${Buffer.from(`KEY=${c}`).toString('base64')} ` +
                    `${Buffer.from(`K${c}`).toString('base64url')} ${Buffer.from(c).toString('hex').toUpperCase()}`,
                )
                .join(' ')}`,
          ],
        ] as const) {
          const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text }), {
            onUpdate: (u) => streamed.push(u),
          });
          if (ticket.status === 'duplicate') throw new Error('duplicate');
          const outcome = await ticket.done;
          expect(outcome.status, outcome.reason).toBe('completed');
          outcomes.push(outcome);
        }
        // The value of a key the host knows may not be pasted into the configuration either.
        expect(() =>
          host.apply({
            bindings: [
              { id: 'pasted', runner: 'echo', route: { bot: 'p' }, config: { prefix: `key ${CANARY.modelFile}` } },
            ],
          }),
        ).toThrow(/^bindings\[0\]\.config\.prefix: holds the value of a secret the host knows/);
        await host.close();

        const forms = Object.values(CANARY).flatMap((c) => [
          ...formsOf(c),
          Buffer.from(c).toString('hex').toUpperCase(),
        ]);
        const haystacks: [string, string][] = [
          ['streamed updates', JSON.stringify(streamed)],
          ['outcomes', JSON.stringify(outcomes)],
          ...readdirSync(host.dataDir)
            .filter((f) => f.startsWith('paddock.db'))
            .map((f): [string, string] => [f, readFileSync(join(host.dataDir, f)).toString('latin1')]),
          ['audit export', (await paddock(['audit', 'export'], { dataDir: host.dataDir })).stdout],
        ];
        for (const [where, text] of haystacks)
          for (const form of forms) expect(text.includes(form), `${form} in ${where}`).toBe(false);
        // The redaction marker is there instead: the run did see and print them.
        expect(JSON.stringify(streamed)).toContain('[REDACTED]');
        expect(outcomes[1]!.stderrTail).toContain('[REDACTED]');
      } finally {
        delete process.env.PADDOCK_CANARY_MODEL_KEY;
        delete process.env.PADDOCK_CANARY_API_KEY;
        delete process.env.PADDOCK_CANARY_SECRET_ACCESS_KEY;
      }
    },
  );
});
