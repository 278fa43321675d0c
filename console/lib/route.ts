// Hash routing: `#/bindings/agent` → page `bindings`, params `['agent']`. The hash never carries data the page did
// not put there; an unknown page shows "not found".
import { useEffect, useState } from 'preact/hooks';

/** Where the console is: a page name and its path parameters (decoded). */
export interface Route {
  page: string;
  params: string[];
}

/** The route of a location hash. */
export function parseHash(hash: string): Route {
  const parts = hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter((p) => p !== '')
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { page: parts[0] ?? 'overview', params: parts.slice(1) };
}

/** The hash of a page and its parameters (each encoded). */
export function href(page: string, ...params: string[]): string {
  return `#/${[page, ...params].map(encodeURIComponent).join('/')}`;
}

/** The current route; re-renders on hash changes. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
