// What the configuration endpoints answer (docs/http-api.md, "Admin endpoints"), as far as the runners, bindings and
// resources pages read it. Every string in here came from a runner package or an admin's file: shown as text only.

/** One runner of `GET /v1/runners` (its manifest, folder and source). */
export interface RunnerInfo {
  id: string;
  name?: string;
  version: string;
  description?: string;
  dir: string;
  source: string;
  capabilities?: { hostRequests?: string[]; append?: boolean };
  resources?: string[];
  effects?: string[];
  limits?: Record<string, number>;
  risk?: string;
}

/** `GET /v1/runners`. */
export interface RunnersAnswer {
  runners: RunnerInfo[];
  problems: { file: string; field?: string; message: string }[];
}

/** A stored configuration object (`GET /v1/bindings`, `GET /v1/resources`). */
export interface ConfigObject<S = Record<string, unknown>> {
  kind: string;
  id: string;
  version: number;
  spec: S;
  updatedAt: string;
}

/** The parts of a binding's stored spec the pages show. */
export interface BindingSpec {
  id: string;
  tenant?: string;
  description?: string;
  runner: string;
  enabled?: boolean;
  sandbox?: string;
  allowDegrade?: boolean;
  steering?: string;
  approvalPolicy?: string;
  workspace?: string;
  route?: { platform?: string; bot?: string; conversation?: { type?: string; id?: string }; eventTypes?: string[] };
  grants?: Record<string, unknown>;
  limits?: Record<string, number>;
  network?: { egress?: string[]; allowPrivate?: boolean };
  readPaths?: string[];
}

/** A stored binding. */
export type BindingObject = ConfigObject<BindingSpec>;

/** `GET /v1/bindings/{id}`: the binding and its recorded changes. */
export interface BindingShow extends BindingObject {
  history: { version: number; action: string; by: string; at: string }[];
}

/** `GET /v1/bindings/{id}/explain`: the worst case a run of the binding may reach, computed by the host. */
export type { Explanation } from '../../host/bindings/explain.js';

/** `POST /v1/bindings/{id}/enable|disable`. */
export interface EnableAnswer {
  bindingId: string;
  enabled: boolean;
  changed: boolean;
  cancelRequested: number;
  cancelledRunIds: string[];
}

/** A binding is enabled unless its spec says otherwise (the schema's default). */
export const isEnabled = (b: BindingSpec): boolean => b.enabled !== false;

/** A text of a value from a spec (a string as is; anything else as compact JSON), for cells and facts. */
export function textOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
