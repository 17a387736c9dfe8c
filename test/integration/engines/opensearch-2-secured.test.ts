import { securedEngine } from '../../support/engine-secured.js';

securedEngine(
  { engine: { product: 'opensearch', major: 2, version: '2.19.4' }, port: 19440 },
  { refusedStarts: true },
);
