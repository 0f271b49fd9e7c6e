/**
 * Hash routing (`#/models/catalog_ranker`): the ops server's own paths (`/models`, `/metrics`, `/api/…`)
 * stay its JSON and text routes, and a reload or a pasted link opens the same page from `/`.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** The path's segments, decoded: `#/vss/catalog/products` → ['vss', 'catalog', 'products']. */
  parts: string[];
  query: URLSearchParams;
}

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path = '/', search = ''] = hash.split('?');
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map((p) => decodeURIComponent(p));
  return { parts, query: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const change = () => setRoute(currentRoute());
    addEventListener('hashchange', change);
    return () => removeEventListener('hashchange', change);
  }, []);
  return route;
}

/** A link target: `href('models', id)` → `#/models/<id>`. */
export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function navigate(...parts: string[]): void {
  location.hash = href(...parts).slice(1);
}
