import { engineCompatibility } from '../../support/engines/engine-compatibility.js';

engineCompatibility({ engine: { product: 'opensearch', major: 2, version: '2.19.4' }, port: 19420 });
