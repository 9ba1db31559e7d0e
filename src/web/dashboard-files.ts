// The dashboard's files (src/dashboard, built by `npm run build` into dist/src/web/dashboard/):
// read once when the listener is made and served from memory, under the dashboard's own CSP.

import { existsSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { SECURITY_HEADERS } from './respond.js';

/**
 * Scripts and styles of this origin only; connections to it and to the fleet's other nodes'
 * web APIs (`origins`, checked by fleet.ts isOrigin: nothing else can reach the header); no
 * inline script, no frames, no plugins.
 */
export function dashboardCsp(origins: Iterable<string> = []): string {
  const connect = ["'self'", ...[...origins].sort()].join(' ');
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src ${connect}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;
}

/** The CSP of a node that is in no fleet. */
export const DASHBOARD_CSP = dashboardCsp();

/** URL path → file name and type. */
const FILES: Readonly<Record<string, readonly [string, string]>> = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/index.html': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/app.css': ['app.css', 'text/css; charset=utf-8'],
};

export interface DashboardFiles {
  /** Whether `pathname` is one of the dashboard's. */
  has(pathname: string): boolean;
  /** Sends the file under `csp`; false when the dashboard was not built. */
  send(pathname: string, response: ServerResponse, head: boolean, csp?: string): boolean;
}

/**
 * Where the build put the files: beside this module in dist/, or dist/ of the tree when run
 * from its source (the tests).
 */
export function dashboardDir(): string | null {
  for (const relative of ['./dashboard/', '../../dist/src/web/dashboard/']) {
    const dir = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  return null;
}

export function loadDashboard(dir: string | null): DashboardFiles {
  const loaded = new Map<string, Buffer>();
  if (dir !== null) {
    for (const [file] of Object.values(FILES)) {
      try {
        loaded.set(file, readFileSync(`${dir}/${file}`));
      } catch {
        // A missing file is served as the dashboard not being built.
      }
    }
  }
  return {
    has: (pathname) => Object.hasOwn(FILES, pathname),
    send(pathname, response, head, csp = DASHBOARD_CSP) {
      const entry = FILES[pathname];
      const body = entry === undefined ? undefined : loaded.get(entry[0]);
      if (entry === undefined || body === undefined) return false;
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-security-policy': csp,
        // Small and built with petreld: revalidated each time rather than stored.
        'cache-control': 'no-cache',
        'content-type': entry[1],
        'content-length': body.length,
      });
      response.end(head ? undefined : body);
      return true;
    },
  };
}
