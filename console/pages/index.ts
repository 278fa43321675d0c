// The console's pages, in navigation order, and who sees each (the API refuses the rest anyway).
import type { FunctionComponent } from 'preact';
import { can, type Role, type Session } from '../lib/session.js';
import { Approvals } from './Approvals.js';
import { Audit } from './Audit.js';
import { Bindings } from './Bindings.js';
import { Overview } from './Overview.js';
import { Resources } from './Resources.js';
import { Runners } from './Runners.js';
import { Runs } from './Runs.js';
import { Sessions } from './Sessions.js';
import { Tokens } from './Tokens.js';

/** What every page gets: the session and the route's parameters. */
export interface PageProps {
  session: Session;
  params: string[];
}

/** One page of the console. */
export interface Page {
  name: string;
  title: string;
  component: FunctionComponent<PageProps>;
  visible: (role: Role) => boolean;
}

/** Every page, in navigation order. */
export const PAGES: Page[] = [
  { name: 'overview', title: 'Overview', component: Overview, visible: can.read },
  { name: 'runners', title: 'Runners', component: Runners, visible: can.readConfig },
  { name: 'bindings', title: 'Bindings', component: Bindings, visible: can.readConfig },
  { name: 'resources', title: 'Resources', component: Resources, visible: can.readConfig },
  { name: 'runs', title: 'Live runs', component: Runs, visible: can.read },
  { name: 'sessions', title: 'Sessions', component: Sessions, visible: can.read },
  { name: 'approvals', title: 'Approvals', component: Approvals, visible: can.read },
  { name: 'audit', title: 'Audit', component: Audit, visible: can.readConfig },
  { name: 'tokens', title: 'Tokens', component: Tokens, visible: can.administer },
];

/** The page named `name` if `role` may see it. */
export function pageFor(name: string, role: Role): Page | undefined {
  return PAGES.find((p) => p.name === name && p.visible(role));
}
