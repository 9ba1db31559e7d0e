// The fleet's report type is issue 8's probe output: what src/tender/probe.ts produces can be
// handed to the reporter as it is (a compile-time check), and passes the registry's validation.

import { expect, it } from 'vitest';
import { type CapabilityReport, parseCapabilityReport } from '../../src/fleet/capabilities.js';
import type { CapabilityReport as ProbeReport } from '../../src/tender/probe.js';
import { report } from './fixtures.js';

const asFleetReport = (r: ProbeReport): CapabilityReport => r;

it('a probe report is a fleet report; its extra fields are not stored', () => {
  const probed: ProbeReport = { ...report(), probedAt: '2026-01-01T12:00:00.000Z', problems: {} };
  expect(parseCapabilityReport(asFleetReport(probed))).toEqual({ ok: true, value: report() });
});
