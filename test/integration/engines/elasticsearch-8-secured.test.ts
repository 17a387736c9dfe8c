import { securedEngine } from '../../support/engine-secured.js';

securedEngine({ engine: { product: 'elasticsearch', major: 8, version: '8.19.8' }, port: 19460 });
