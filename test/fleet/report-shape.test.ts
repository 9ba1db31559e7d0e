// The fleet's report type is issue 8's probe output: what src/tender/probe.ts produces can be
// handed to the reporter as it is (a compile-time check), and with the node's --runtimes passes
// the registry's validation.

import { expect, it } from 'vitest';
import type { Runtime } from '../../src/daemon/config.js';
import { type CapabilityReport, parseNodeReport } from '../../src/fleet/capabilities.js';
import type { CapabilityReport as ProbeReport } from '../../src/tender/probe.js';
import { report } from './fixtures.js';

const asFleetReport = (r: ProbeReport): CapabilityReport => r;

it('a probe report with --runtimes is a node report; its extra fields are not stored', () => {
  const { runtimes: _, ...probe } = report();
  const probed: ProbeReport = { ...probe, probedAt: '2026-01-01T12:00:00.000Z', problems: {} };
  const configured: readonly Runtime[] = ['hvt', 'spt'];
  expect(parseNodeReport({ ...asFleetReport(probed), runtimes: configured })).toEqual({
    ok: true,
    value: report(),
  });
});
