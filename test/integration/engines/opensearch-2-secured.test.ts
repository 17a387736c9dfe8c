import { engineSecondNode } from '../../support/engines/engine-second-node.js';

engineSecondNode(
  { engine: { product: 'opensearch', major: 2, version: '2.19.4' }, port: 19440 },
  { secure: true, refusedStarts: true },
);
