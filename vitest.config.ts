import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/setup/global-setup.ts'],
          // The workers and tools these start run as shipped, not with kafkajs's test retries.
          setupFiles: ['test/support/setup/as-shipped-env.ts'],
          // One real stack on a 2-core machine: integration files run one at a time.
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 600_000,
        },
      },
      {
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          globalSetup: ['test/support/setup/global-setup.ts'],
          setupFiles: ['test/support/setup/as-shipped-env.ts'],
          fileParallelism: false,
          testTimeout: 20 * 60_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
