import { engineSecondNode } from '../../support/engines/engine-second-node.js';

// Not secured: Maven Central's security plugin for OpenSearch 3 (3.4.0.0 only) needs the
// rule-framework module, which neither the integ-test-zip nor Maven Central has.
engineSecondNode(
  { engine: { product: 'opensearch', major: 3, version: '3.3.2' }, port: 19470 },
  { secure: false },
);
