import { planWorkload, type WorkloadOptions, type WorkloadRecord } from '../../src/generator/workload.js';

/** The scenarios' traffic: re-sent ids inside and far outside the window, poison, hostile keys, shuffled versions. */
export function traffic(seed: number, count: number, over: WorkloadOptions = {}): WorkloadRecord[] {
  return planWorkload({
    seed,
    count,
    ratePerSec: Math.max(5_000, count / 10),
    ...(over.ratePerSec !== undefined ? { ratePerSec: over.ratePerSec } : {}),
    clients: 300,
    duplicateShare: 0.01,
    duplicateDelayMs: { min: 10, max: 500 },
    lateDuplicateShare: 0.01,
    lateDuplicateDelayMs: { min: 1_500, max: 4_000 },
    poisonShare: 0.005,
    poisonKinds: ['invalid-json', 'missing-field', 'wrong-type', 'null-value'],
    hostileKeyShare: 0.005,
    shuffleVersions: 0.1,
    ...over,
  });
}
