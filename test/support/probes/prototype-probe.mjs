// Loaded into a tool's own process (NODE_OPTIONS=--import=<this file>): at exit it writes one
// line to stderr saying whether Object.prototype is as it was at start (same own properties,
// same values) and whether a fresh object shows a property a hostile key could have planted.
// The tests that feed a tool `__proto__`/`constructor`/`prototype` keys look for that line.
const names = () => Reflect.ownKeys(Object.prototype).map(String).sort();
const before = names();
const values = new Map(Reflect.ownKeys(Object.prototype).map((k) => [k, Object.prototype[k]]));

process.on('exit', () => {
  const after = names();
  const changed = Reflect.ownKeys(Object.prototype).filter((k) => values.get(k) !== Object.prototype[k]);
  const fresh = {};
  const planted = ['isAdmin', 'polluted', 'prototype'].filter((k) => fresh[k] !== undefined);
  const clean =
    after.join(',') === before.join(',') &&
    changed.length === 0 &&
    planted.length === 0 &&
    Object.getPrototypeOf(fresh) === Object.prototype;
  process.stderr.write(
    clean
      ? 'prototype-probe: Object.prototype untouched\n'
      : `prototype-probe: Object.prototype CHANGED (added ${after.filter((n) => !before.includes(n)).join(',')}; changed ${changed.map(String).join(',')}; planted ${planted.join(',')})\n`,
  );
});
