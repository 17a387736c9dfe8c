import { engineCompatibility } from '../../support/engine-compatibility.js';

engineCompatibility({ engine: { product: 'opensearch', major: 2, version: '2.19.4' }, port: 19420 });
