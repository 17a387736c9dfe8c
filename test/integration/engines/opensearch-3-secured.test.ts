import { securedEngine } from '../../support/engine-secured.js';

// 3.4.0, not 3.3.2: Maven Central has the security plugin for 3.4.0 (3.4.0.0) and none for 3.3.x.
securedEngine({ engine: { product: 'opensearch', major: 3, version: '3.4.0' }, port: 19470 });
