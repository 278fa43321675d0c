// Overview: the figures an admin checks first (provisional until GET /v1/overview lands).
import type { PageProps } from './index.js';

/** The overview page. */
export function Overview(_props: PageProps) {
  return <h1>Overview</h1>;
}
