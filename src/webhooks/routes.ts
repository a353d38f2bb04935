/**
 * The receiver's one route: `POST {path}` (a delivery for every configured location) or `POST {path}/{grant}`
 * (that grant's locations: one endpoint registered per OAuth grant says whose delivery it is). Pure.
 */
import type { GrantDirectory } from './location-directory.js';

/** The route as configured, without trailing slashes (`/` for the root). */
export function routePath(path: string): string {
  return path.replace(/\/+$/, '') || '/';
}

/** The path of a request target; undefined when it is not a URL (`POST http://[ HTTP/1.1`). */
export function pathOf(target: string): string | undefined {
  try {
    return new URL(target, 'http://receiver').pathname;
  } catch {
    return undefined;
  }
}

/**
 * The grant `pathname` names under `path` (null: the bare path); undefined when the path is not ours (another
 * path, a malformed %-escape, a grant this connector does not have).
 */
export function grantRoute(
  path: string,
  pathname: string,
  directory: Pick<GrantDirectory, 'hasGrant'>,
): { grant: string | null } | undefined {
  if (pathname === path || pathname === `${path}/`) return { grant: null };
  const prefix = path === '/' ? '/' : `${path}/`;
  if (!pathname.startsWith(prefix)) return undefined;
  let grant: string;
  try {
    grant = decodeURIComponent(pathname.slice(prefix.length));
  } catch {
    return undefined;
  }
  return grant !== '' && !grant.includes('/') && directory.hasGrant(grant) ? { grant } : undefined;
}
