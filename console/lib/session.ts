// Who is signed in: the token lives in sessionStorage (gone with the tab, never in a URL, a cookie or
// localStorage — so there is no CSRF surface) and the role and tenant come from `GET /v1/whoami`.
import { createApi, type Api, type ApiError } from './api.js';

const KEY = 'paddock.console.token';

/** A role of the API (docs/http-api.md, "Tokens, tenants, roles"). */
export type Role = 'platform' | 'viewer' | 'approver' | 'admin';

/** The signed-in token as the API describes it (`GET /v1/whoami`). */
export interface WhoAmI {
  tokenId: string;
  tenant: string;
  role: Role;
  name: string;
  expiresAt: string | null;
}

/** A signed-in person: their client and who the API says they are. */
export interface Session {
  api: Api;
  who: WhoAmI;
}

/** The token kept by this tab, if any. */
export function storedToken(): string | undefined {
  try {
    return sessionStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

/** Forget the token (sign out, or a 401). */
export function forgetToken(): void {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // Storage disabled: nothing was kept.
  }
}

/**
 * Sign in with `token`: asks the API who it is (a refused token throws the API's error and nothing is kept), then
 * keeps it for this tab.
 */
export async function signIn(token: string, onUnauthorized: (error: ApiError) => void): Promise<Session> {
  let signedIn = false;
  const api = createApi(token, (error) => {
    if (signedIn) onUnauthorized(error);
  });
  const who = await api.get<WhoAmI>('/v1/whoami');
  signedIn = true;
  try {
    sessionStorage.setItem(KEY, token);
  } catch {
    // Storage disabled: the session lasts until the page reloads.
  }
  return { api, who };
}

/** What a role may do in the console (the API enforces the same; the console only hides what would be refused). */
export const can = {
  /** Approve and deny approvals, revoke grants. */
  decide: (role: Role) => role === 'approver' || role === 'admin',
  /** Enable and disable bindings, cancel runs, manage tokens. */
  administer: (role: Role) => role === 'admin',
  /** Read the overview (every role a person signs in with). */
  read: (role: Role) => role !== 'platform',
  /** Read the configuration and audit pages (runners, bindings, resources, audit): the API answers these only here. */
  readConfig: (role: Role) => role === 'admin' || role === 'viewer',
};
