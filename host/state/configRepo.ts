import { canonicalJson } from '../audit/canonicalJson.js';
import { HostError } from '../errors.js';
import { dbOf, type Store } from './store.js';
import { dialectOf, type Db } from './db.js';
import type { Binding, ConfigFile, Resources } from '../bindings/schema.js';

/** Kinds of configuration objects, as stored (`binding` plus one per resource kind). */
export const CONFIG_KINDS = {
  models: 'model',
  knowledgeBases: 'knowledgeBase',
  mcpServers: 'mcpServer',
  skills: 'skill',
  artifacts: 'artifact',
  mounts: 'mount',
} as const satisfies Record<keyof Resources, string>;
/** A stored configuration object kind. */
export type ConfigKind = (typeof CONFIG_KINDS)[keyof typeof CONFIG_KINDS] | 'binding';

/** One stored configuration object. */
export interface ConfigObject<T = unknown> {
  kind: ConfigKind;
  id: string;
  version: number;
  spec: T;
  updatedAt: string;
}

/** What a write did. */
export type ConfigChange = 'created' | 'updated' | 'unchanged' | 'deleted';

interface Row {
  kind: ConfigKind;
  id: string;
  version: number;
  spec: string;
  updated_at: string;
}

/**
 * A stored spec's tenant in SQL, as tenantOf (host/config/tenant.ts) reads it: the expression of the index
 * config_objects_by_tenant (migration 0009), text for text, or SQLite does not use the index.
 */
/** The tenant of a stored spec, as SQL (config_objects_by_tenant indexes this very expression). */
export const TENANT_OF_SPEC = "coalesce(json_extract(spec, '$.tenant'), 'default')";
/** {@link TENANT_OF_SPEC} on PostgreSQL: the expression of its index config_objects_by_tenant (pg/0009). */
export const TENANT_OF_SPEC_PG = "coalesce(spec::json ->> 'tenant', 'default')";

const toObject = <T>(r: Row): ConfigObject<T> => ({
  kind: r.kind,
  id: r.id,
  version: r.version,
  spec: JSON.parse(r.spec) as T,
  updatedAt: r.updated_at,
});

/**
 * Resources and bindings in SQLite, the source of truth. Every change bumps the object's
 * version, is kept in `config_changes`, and is audited in the same transaction.
 * Callers validate specs first (host/bindings/apply.ts); this layer only stores them.
 */
export class ConfigRepo {
  constructor(private readonly store: Store) {}

  /** The current version of one object. */
  get<T = unknown>(kind: ConfigKind, id: string): ConfigObject<T> | undefined {
    const row = dbOf(this.store).prepare('SELECT * FROM config_objects WHERE kind = ? AND id = ?').get(kind, id) as
      Row | undefined;
    return row ? toObject<T>(row) : undefined;
  }

  /** Every object of a kind (or of all kinds), by id. */
  list<T = unknown>(kind?: ConfigKind): ConfigObject<T>[] {
    const rows = (
      kind
        ? dbOf(this.store).prepare('SELECT * FROM config_objects WHERE kind = ? ORDER BY id').all(kind)
        : dbOf(this.store).prepare('SELECT * FROM config_objects ORDER BY kind, id').all()
    ) as Row[];
    return rows.map((r) => toObject<T>(r));
  }

  /**
   * Every object of a kind that `tenant` holds (tenantOf: a spec without `tenant` is the default tenant's), by id. One
   * index range (config_objects_by_tenant, migration 0009): other tenants' objects are never read, so one tenant's
   * many bindings cost nothing to another tenant's routing and planning.
   */
  listOfTenant<T = unknown>(kind: ConfigKind, tenant: string): ConfigObject<T>[] {
    // INDEXED BY: without statistics SQLite prefers the primary key's (kind) range, a scan of every tenant's objects.
    // PostgreSQL has no INDEXED BY; its index is on its own form of the expression (pg/0009_read_indexes.sql).
    const db = dbOf(this.store);
    const rows = db
      .prepare(
        dialectOf(db) === 'postgres'
          ? `SELECT * FROM config_objects WHERE kind = ? AND ${TENANT_OF_SPEC_PG} = ? ORDER BY id`
          : 'SELECT * FROM config_objects INDEXED BY config_objects_by_tenant ' +
              `WHERE kind = ? AND ${TENANT_OF_SPEC} = ? ORDER BY id`,
      )
      .all(kind, tenant) as Row[];
    return rows.map((r) => toObject<T>(r));
  }

  /** The resources `tenant` holds, in the shape of `paddock.yaml` (what {@link snapshot} has of that tenant). */
  resourcesOfTenant(tenant: string): Resources {
    return Object.fromEntries(
      Object.entries(CONFIG_KINDS).map(([plural, kind]) => [
        plural,
        this.listOfTenant(kind, tenant).map((o) => o.spec),
      ]),
    ) as Resources;
  }

  /** Every object `tenant` holds, by kind then id (what {@link list} has of that tenant, in its order). */
  listAllOfTenant(tenant: string): ConfigObject[] {
    // Kind by kind, in the order SQLite's `ORDER BY kind` gives (the names are ASCII: code-unit order is byte order).
    const kinds = ([...Object.values(CONFIG_KINDS), 'binding'] as ConfigKind[]).sort();
    return kinds.flatMap((kind) => this.listOfTenant(kind, tenant));
  }

  /** The part of the configuration `tenant` holds, in the shape of `paddock.yaml` (its part of {@link snapshot}). */
  snapshotOfTenant(tenant: string): ConfigFile {
    return {
      resources: this.resourcesOfTenant(tenant),
      bindings: this.listOfTenant<Binding>('binding', tenant).map((o) => o.spec),
    };
  }

  /** A binding, or NOT_FOUND. */
  binding(id: string): ConfigObject<Binding> {
    const found = this.get<Binding>('binding', id);
    if (!found) throw new HostError('NOT_FOUND', `no binding "${id}"`, { bindingId: id });
    return found;
  }

  /** Create or update an object; an identical spec changes nothing and writes nothing. */
  put(kind: ConfigKind, id: string, spec: unknown, by: string): ConfigChange {
    return this.store.transaction(() => {
      const current = this.get(kind, id);
      const text = canonicalJson(spec);
      if (current && canonicalJson(current.spec) === text) return 'unchanged';
      const version = (current?.version ?? 0) + 1;
      const at = new Date().toISOString();
      dbOf(this.store)
        .prepare(
          'INSERT INTO config_objects (kind, id, version, spec, updated_at) VALUES (?, ?, ?, ?, ?) ON ' +
            'CONFLICT (kind, id) DO UPDATE SET version = excluded.version, spec = excluded.spec, updated_at = ' +
            'excluded.updated_at',
        )
        .run(kind, id, version, text, at);
      const action = current ? 'updated' : 'created';
      this.record(kind, id, version, action, text, by, at);
      return action;
    });
  }

  /** Delete an object (its history stays). */
  delete(kind: ConfigKind, id: string, by: string): boolean {
    return this.store.transaction(() => {
      const current = this.get(kind, id);
      if (!current) return false;
      const at = new Date().toISOString();
      dbOf(this.store).prepare('DELETE FROM config_objects WHERE kind = ? AND id = ?').run(kind, id);
      this.record(kind, id, current.version + 1, 'deleted', null, by, at);
      return true;
    });
  }

  /** Bytes of configuration `tenant`'s API admins wrote on `day` (YYYY-MM-DD, UTC). */
  writtenOn(tenant: string, day: string): number {
    const row = dbOf(this.store)
      .prepare('SELECT bytes FROM tenant_config_writes WHERE tenant = ? AND day = ?')
      .get(tenant, day) as { bytes: number } | undefined;
    return row?.bytes ?? 0;
  }

  /** Count `bytes` more written by `tenant`'s API admins on `day` (call inside the transaction of the writes). */
  countWritten(tenant: string, day: string, bytes: number): void {
    dbOf(this.store)
      .prepare(
        'INSERT INTO tenant_config_writes (tenant, day, bytes) VALUES (?, ?, ?) ' +
          'ON CONFLICT (tenant, day) DO UPDATE SET bytes = bytes + excluded.bytes',
      )
      .run(tenant, day, bytes);
  }

  /** The whole current configuration, in the shape of `paddock.yaml`. */
  snapshot(): ConfigFile {
    const resources = Object.fromEntries(
      Object.entries(CONFIG_KINDS).map(([plural, kind]) => [plural, this.list(kind).map((o) => o.spec)]),
    ) as Resources;
    return { resources, bindings: this.list<Binding>('binding').map((o) => o.spec) };
  }

  /** Every recorded change of one object, oldest first. */
  history(kind: ConfigKind, id: string): { version: number; action: string; by: string; at: string }[] {
    return dbOf(this.store)
      .prepare('SELECT version, action, by, at FROM config_changes WHERE kind = ? AND id = ? ORDER BY seq')
      .all(kind, id) as {
      version: number;
      action: string;
      by: string;
      at: string;
    }[];
  }

  private record(
    kind: ConfigKind,
    id: string,
    version: number,
    action: 'created' | 'updated' | 'deleted',
    spec: string | null,
    by: string,
    at: string,
  ): void {
    dbOf(this.store)
      .prepare('INSERT INTO config_changes (at, kind, id, version, action, spec, by) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(at, kind, id, version, action, spec, by);
    this.store.audit.append(
      {
        type: `config.${action}`,
        actor: by,
        data: { kind, id, version, spec: spec === null ? null : (JSON.parse(spec) as unknown) },
      },
      at,
    );
  }
}

/** Stored specs of some kinds, read from a database opened read-only (e.g. by `paddock doctor`), by kind then id. */
export function readStoredSpecs(db: Db, kinds: readonly ConfigKind[]): { kind: ConfigKind; spec: unknown }[] {
  const rows = db
    .prepare(
      `SELECT kind, spec FROM config_objects WHERE kind IN (${kinds.map(() => '?').join(', ')}) ORDER BY kind, id`,
    )
    .all(...kinds) as { kind: ConfigKind; spec: string }[];
  return rows.map((r) => ({ kind: r.kind, spec: JSON.parse(r.spec) as unknown }));
}

/** Stored specs of some kinds, read through the store's own connection (`GET /v1/doctor`), by kind then id. */
export function storedSpecs(store: Store, kinds: readonly ConfigKind[]): { kind: ConfigKind; spec: unknown }[] {
  return readStoredSpecs(dbOf(store), kinds);
}
