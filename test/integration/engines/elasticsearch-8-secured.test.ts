import { engineSecondNode } from '../../support/engines/engine-second-node.js';

engineSecondNode(
  { engine: { product: 'elasticsearch', major: 8, version: '8.19.8' }, port: 19460 },
  { secure: true },
);
