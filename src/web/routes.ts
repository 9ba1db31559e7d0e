// The web API's resources: which method and path is which action, which actions change
// something (one audit line each) and which take a body. Pure.

export type Action =
  | 'image'
  | 'stats'
  | 'node'
  | 'fleet'
  | 'list'
  | 'get'
  | 'create'
  | 'destroy'
  | 'restart'
  | 'replace'
  | 'console'
  | 'blocks'
  | 'block-add'
  | 'block-remove'
  | 'block-set'
  | 'block-dump'
  | 'samples'
  | 'exits'
  | 'policies'
  | 'policy-add'
  | 'policy-remove';
export const CHANGES: ReadonlySet<Action> = new Set([
  'create',
  'destroy',
  'restart',
  'replace',
  'block-add',
  'block-remove',
  'block-set',
  'policy-add',
  'policy-remove',
]);
/** The requests that take a body: the image of a create or replace, the data of a block device. */
export const BODIES: ReadonlySet<Action> = new Set(['create', 'replace', 'block-set']);

export type Route =
  | { readonly kind: 'route'; readonly action: Action; readonly name: string }
  | { readonly kind: 'none'; readonly status: 404 | 405; readonly code: string; readonly message: string };

const PREFIX = '/api/v1/';

/** The route of a method and path: `/api/v1/node`, `/api/v1/unikernels[/{name}[/restart|/console]]`. */
export function matchRoute(method: string, pathname: string): Route {
  const none = (status: 404 | 405, code: string, message: string): Route => ({
    kind: 'none',
    status,
    code,
    message,
  });
  if (!pathname.startsWith(PREFIX)) return none(404, 'E_WEB_NOT_FOUND', `no such resource ${pathname}`);
  const parts = pathname.slice(PREFIX.length).split('/');
  let name = '';
  try {
    name = parts[1] === undefined ? '' : decodeURIComponent(parts[1]);
  } catch {
    return none(404, 'E_WEB_NOT_FOUND', `no such resource ${pathname}`);
  }
  const allowed = (table: Partial<Record<string, Action>>): Route => {
    const action = table[method];
    if (action !== undefined) return { kind: 'route', action, name };
    return none(
      405,
      'E_WEB_METHOD',
      `${method} is not allowed on ${pathname} (allowed: ${Object.keys(table).join(', ')})`,
    );
  };
  if (parts.length === 1 && parts[0] === 'node') return allowed({ GET: 'node' });
  if (parts.length === 1 && parts[0] === 'fleet') return allowed({ GET: 'fleet' });
  if (parts.length === 1 && parts[0] === 'exits') return allowed({ GET: 'exits' });
  if (parts[0] === 'policies') {
    if (parts.length === 1) return allowed({ GET: 'policies' });
    if (parts.length === 2 && name !== '') return allowed({ PUT: 'policy-add', DELETE: 'policy-remove' });
    return none(404, 'E_WEB_NOT_FOUND', `no such resource ${pathname}`);
  }
  if (parts[0] === 'blocks') {
    if (parts.length === 1) return allowed({ GET: 'blocks' });
    if (parts.length === 2 && name !== '') return allowed({ PUT: 'block-add', DELETE: 'block-remove' });
    if (parts.length === 3 && parts[2] === 'data' && name !== '')
      return allowed({ GET: 'block-dump', PUT: 'block-set' });
    return none(404, 'E_WEB_NOT_FOUND', `no such resource ${pathname}`);
  }
  if (parts[0] !== 'unikernels') return none(404, 'E_WEB_NOT_FOUND', `no such resource ${pathname}`);
  if (parts.length === 1) return allowed({ GET: 'list' });
  if (parts.length === 2 && name !== '')
    return allowed({ GET: 'get', PUT: 'create', POST: 'create', DELETE: 'destroy' });
  if (parts.length === 3 && parts[2] === 'restart' && name !== '') return allowed({ POST: 'restart' });
  if (parts.length === 3 && parts[2] === 'replace' && name !== '') return allowed({ POST: 'replace' });
  if (parts.length === 3 && parts[2] === 'console' && name !== '') return allowed({ GET: 'console' });
  if (parts.length === 3 && parts[2] === 'stats' && name !== '') return allowed({ GET: 'stats' });
  if (parts.length === 3 && parts[2] === 'image' && name !== '') return allowed({ GET: 'image' });
  if (parts.length === 3 && parts[2] === 'samples' && name !== '') return allowed({ GET: 'samples' });
  return none(404, 'E_WEB_NOT_FOUND', `no such resource ${pathname}`);
}
