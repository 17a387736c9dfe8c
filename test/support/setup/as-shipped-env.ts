/**
 * Vitest sets NODE_ENV=test, and kafkajs then swaps its retry defaults for test ones: 50 ms
 * growing ×1.5 up to 1 s, 15 retries, against 300 ms ×2 up to 30 s, 5 retries. Every worker
 * and tool a real-server test starts inherits the environment, so each ran with kafkajs's
 * test retries, not as shipped, and the harness's own producer gave up after about 6 s of a
 * killed leader where its settings meant to outlast KRaft's 9-s fencing. Run before each file
 * of the integration and fault suites, before anything loads kafkajs.
 */
delete process.env.NODE_ENV;
