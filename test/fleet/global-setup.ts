// Vitest global setup: one throwaway PostgreSQL cluster for the whole run, shared by every fleet
// test file through PETREL_TEST_PG_URL (each test still gets its own schema). Does nothing when
// the URL is already set; when PostgreSQL is missing it leaves the fleet suites to skip, or to
// fail under CI (test/fleet/pg.ts).

import { postgresInstalled, startCluster } from './pg.js';

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.PETREL_TEST_PG_URL || !postgresInstalled()) return undefined;
  const cluster = await startCluster();
  process.env.PETREL_TEST_PG_URL = cluster.url;
  return async () => {
    delete process.env.PETREL_TEST_PG_URL;
    await cluster.stop();
  };
}
