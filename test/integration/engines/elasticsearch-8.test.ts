import { engineCompatibility } from '../../support/engines/engine-compatibility.js';

engineCompatibility({ engine: { product: 'elasticsearch', major: 8, version: '8.19.8' }, port: 19410 });
