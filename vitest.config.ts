import { defineConfig } from 'vitest/config';
import { noKvmRequested, preloadWithoutKvm } from './test/native/kvm.js';

// Two projects so CI can report unit and property tests apart; both run in `npm test`.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          // One throwaway PostgreSQL cluster shared by the fleet tests (scripts/test-postgres.sh).
          globalSetup: ['test/fleet/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 30_000,
          // PETREL_TEST_NO_KVM=1: every test file and what it starts sees no /dev/kvm (test/native/kvm.ts).
          env: noKvmRequested ? { LD_PRELOAD: preloadWithoutKvm(process.env.LD_PRELOAD) } : {},
        },
      },
      {
        test: {
          name: 'property',
          include: ['property-tests/**/*.test.ts'],
          testTimeout: 300_000,
        },
      },
    ],
  },
});
