// Resources: the tenant's models (pricing, the budgets of the bindings that grant each, and their spend of the last
// 24 h), spend per binding against its day budgets, knowledge bases, MCP servers with their allowed tools, skills
// with digests and change flags, artifacts and mounts; and the bindings clients can call as OpenAI-compatible models.
// From GET /v1/resources, /v1/bindings, /v1/models, /v1/spend and /v1/skills.
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { href } from '../lib/route.js';
import { useLoad } from '../lib/useLoad.js';
import { listOrNone } from './configText.js';
import { textOf, type BindingObject, type ConfigObject } from './configTypes.js';
import type { PageProps } from './index.js';
import { SkillTable } from './SkillTable.js';
import { SpendTable } from './SpendTable.js';
import { tokens, usd, type ModelSpend, type SkillState, type SpendAnswer } from './spendTypes.js';

type Spec = Record<string, unknown>;
type Resource = ConfigObject<Spec>;

/** The budget limits a binding puts on its model calls (docs/gateway.md), in words. */
function budgetText(limits: Record<string, number> | undefined): string {
  const l = limits ?? {};
  const parts = [
    l.modelTokensPerRun !== undefined && `${l.modelTokensPerRun.toLocaleString()} tokens a run`,
    l.modelCostPerRunUsd !== undefined && `$${l.modelCostPerRunUsd} a run`,
    l.modelTokensPerDay !== undefined && `${l.modelTokensPerDay.toLocaleString()} tokens a day`,
    l.modelCostPerDayUsd !== undefined && `$${l.modelCostPerDayUsd} a day`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no budget';
}

/** A model's calls of the last 24 h in words. */
function modelSpendText(m: ModelSpend | undefined): string {
  if (!m) return 'no calls';
  const failed = m.failedCalls > 0 ? ` (${m.failedCalls.toLocaleString()} failed)` : '';
  return (
    `${m.calls.toLocaleString()} ${m.calls === 1 ? 'call' : 'calls'}${failed}: ${tokens(m.inputTokens)} in, ` +
    `${tokens(m.outputTokens)} out, ${usd(m.costUsd)}`
  );
}

/** Ids a grant list names (an MCP grant may be `{ id, tools }`). */
function grantIds(v: unknown): string[] {
  return Array.isArray(v) ? v.map((g) => (typeof g === 'string' ? g : textOf((g as { id?: unknown }).id))) : [];
}

/** A secret reference as where it is read from, never a value (the API sends none). */
function secretRef(ref: unknown): string {
  const r = ref as { env?: unknown; file?: unknown } | undefined;
  if (!r) return 'none';
  return r.env !== undefined ? `env ${textOf(r.env)}` : r.file !== undefined ? `file ${textOf(r.file)}` : 'none';
}

/** The resources page. */
export function Resources({ session }: PageProps) {
  const load = useLoad(
    async (signal) => {
      const [resources, bindings, models, spend, skills] = await Promise.all([
        session.api.get<Resource[]>('/v1/resources', signal),
        session.api.get<BindingObject[]>('/v1/bindings', signal),
        session.api.get<{ data: { id: string; created: number }[] }>('/v1/models', signal),
        session.api.get<SpendAnswer>('/v1/spend', signal),
        session.api.get<{ skills: SkillState[] }>('/v1/skills', signal),
      ]);
      return { resources, bindings, models: models.data, spend, skills: skills.skills };
    },
    [session],
  );
  if (!load.data)
    return (
      <>
        <h1>Resources</h1>
        {load.loading ? <p class="muted">Loading…</p> : <ErrorNote error={load.error} action="Loading resources" />}
      </>
    );
  const { resources, bindings, models, spend, skills } = load.data;
  const spendOf = (model: string) => spend.models.find((m) => m.model === model);
  const of = (kind: string) => resources.filter((r) => r.kind === kind);
  /** The bindings that grant resource `id` of grant list `grant`. */
  const grantedBy = (grant: string, id: string) =>
    bindings.filter((b) => grantIds(b.spec.grants?.[grant]).includes(id));
  const bindingLinks = (list: BindingObject[]) =>
    list.length === 0 ? (
      <span class="muted">none</span>
    ) : (
      <ul class="inline">
        {list.map((b) => (
          <li key={b.id}>
            <a href={href('bindings', b.id)}>{b.id}</a>
          </li>
        ))}
      </ul>
    );
  const updated = { title: 'Changed', cell: (r: Resource) => <Time at={r.updatedAt} relative /> };
  return (
    <>
      <h1>Resources</h1>
      <p class="hint">What bindings of tenant {session.who.tenant} may grant their runs. Secrets show as references.</p>
      <ErrorNote error={load.error} action="Reloading" />

      <h2>Models</h2>
      <Table
        rows={of('model')}
        rowKey={(r) => r.id}
        empty="No model."
        columns={[
          { title: 'Model', cell: (r) => <span class="mono">{r.id}</span> },
          {
            title: 'Provider',
            cell: (r) =>
              r.spec.provider === 'scripted' ? (
                <>
                  scripted <span class="badge warn">test model</span> {textOf(r.spec.model)}
                </>
              ) : (
                `${textOf(r.spec.provider)} ${textOf(r.spec.model)}`
              ),
          },
          { title: 'Key', cell: (r) => secretRef(r.spec.apiKey) },
          {
            title: 'Pricing',
            cell: (r) => {
              const p = r.spec.pricing as { inputPerMTokUsd: number; outputPerMTokUsd: number } | undefined;
              return p ? `$${p.inputPerMTokUsd} in / $${p.outputPerMTokUsd} out per M tokens` : 'not priced';
            },
          },
          {
            title: 'Budgets (per binding)',
            cell: (r) => {
              const users = grantedBy('models', r.id);
              if (users.length === 0) return <span class="muted">not granted</span>;
              return (
                <ul class="plain">
                  {users.map((b) => (
                    <li key={b.id}>
                      <a href={href('bindings', b.id)}>{b.id}</a>: {budgetText(b.spec.limits)}
                    </li>
                  ))}
                </ul>
              );
            },
          },
          { title: 'Spend (24 h)', cell: (r) => modelSpendText(spendOf(r.id)) },
          updated,
        ]}
      />

      <h2>Model spend by binding</h2>
      <p class="hint">
        The last 24 h, since <Time at={spend.since} />: the window the day budgets count. Calls in flight hold their
        worst case against the budgets too.
      </p>
      <SpendTable bindings={spend.bindings} />

      <h2>Knowledge bases</h2>
      <Table
        rows={of('knowledgeBase')}
        rowKey={(r) => r.id}
        empty="No knowledge base."
        columns={[
          { title: 'Knowledge base', cell: (r) => <span class="mono">{r.id}</span> },
          { title: 'Description', cell: (r) => textOf(r.spec.description ?? r.spec.name) },
          {
            title: 'Source',
            cell: (r) => (r.spec.path !== undefined ? `folder ${textOf(r.spec.path)}` : `HTTP ${textOf(r.spec.url)}`),
          },
          { title: 'Data class', cell: (r) => textOf(r.spec.sensitive) || <span class="muted">none</span> },
          { title: 'Granted to', cell: (r) => bindingLinks(grantedBy('knowledgeBases', r.id)) },
          updated,
        ]}
      />

      <h2>MCP servers</h2>
      <Table
        rows={of('mcpServer')}
        rowKey={(r) => r.id}
        empty="No MCP server."
        columns={[
          { title: 'Server', cell: (r) => <span class="mono">{r.id}</span> },
          {
            title: 'Runs',
            cell: (r) =>
              r.spec.command !== undefined ? `command ${textOf(r.spec.command)}` : `URL ${textOf(r.spec.url)}`,
          },
          {
            title: 'Allowed tools',
            cell: (r) => {
              const tools = r.spec.tools as { allow?: string[]; deny?: string[] } | undefined;
              return tools?.allow ? listOrNone(tools.allow) : 'every tool it lists';
            },
          },
          {
            title: 'Denied tools',
            cell: (r) => listOrNone((r.spec.tools as { deny?: string[] } | undefined)?.deny),
          },
          { title: 'Data class', cell: (r) => textOf(r.spec.sensitive) || <span class="muted">none</span> },
          { title: 'Granted to', cell: (r) => bindingLinks(grantedBy('mcpServers', r.id)) },
          updated,
        ]}
      />

      <h2>Skills</h2>
      <SkillTable skills={of('skill')} states={skills} grantedTo={(id) => bindingLinks(grantedBy('skills', id))} />

      <h2>Artifacts</h2>
      <Table
        rows={of('artifact')}
        rowKey={(r) => r.id}
        empty="No artifact."
        columns={[
          { title: 'Artifact', cell: (r) => <span class="mono">{r.id}</span> },
          { title: 'Name', cell: (r) => textOf(r.spec.name) },
          { title: 'Path', cell: (r) => <span class="mono">{textOf(r.spec.path)}</span> },
          { title: 'Granted to', cell: (r) => bindingLinks(grantedBy('artifacts', r.id)) },
          updated,
        ]}
      />

      <h2>Mounts</h2>
      <Table
        rows={of('mount')}
        rowKey={(r) => r.id}
        empty="No mount."
        columns={[
          { title: 'Mount', cell: (r) => <span class="mono">{r.id}</span> },
          { title: 'Path', cell: (r) => <span class="mono">{textOf(r.spec.path)}</span> },
          { title: 'Mode', cell: (r) => (r.spec.mode === 'rw' ? 'read-write' : 'read-only') },
          { title: 'Granted to', cell: (r) => bindingLinks(grantedBy('mounts', r.id)) },
          updated,
        ]}
      />

      <h2>Bindings served as OpenAI-compatible models</h2>
      <Table
        rows={models}
        rowKey={(m) => m.id}
        empty="No enabled binding answers as a model (route: { platform: openai, bot: <its id> })."
        columns={[
          { title: 'Model name', cell: (m) => <a href={href('bindings', m.id)}>{m.id}</a> },
          { title: 'Applied', cell: (m) => <Time at={new Date(m.created * 1000).toISOString()} /> },
        ]}
      />
    </>
  );
}
