import { engineCompatibility } from '../../support/engines/engine-compatibility.js';

engineCompatibility({ engine: { product: 'opensearch', major: 3, version: '3.3.2' }, port: 19430 });
