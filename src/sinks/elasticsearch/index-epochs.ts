import type { Client } from '@elastic/elasticsearch';

/**
 * Which incarnation of an index is live: its `index.uuid`, which changes when an index is
 * deleted and created again (a rebuild). Redis marks carry the uuid of the index their
 * document was written to, so marks that describe a deleted index are never believed.
 * Cached for `maxAgeMs`; an index that does not exist has no epoch (marks are not used).
 */
export class IndexEpochs {
  private readonly cache = new Map<string, { uuid: string | undefined; at: number }>();
  private readonly loading = new Map<string, Promise<string | undefined>>();

  constructor(
    private readonly client: Client,
    private readonly maxAgeMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The uuid of the live index, or undefined when it does not exist or cannot be read now. */
  async of(index: string): Promise<string | undefined> {
    const hit = this.cache.get(index);
    if (hit !== undefined && this.now() - hit.at < this.maxAgeMs) return hit.uuid;
    let p = this.loading.get(index);
    if (p === undefined) {
      p = this.read(index).finally(() => this.loading.delete(index));
      this.loading.set(index, p);
    }
    return p;
  }

  private async read(index: string): Promise<string | undefined> {
    try {
      const res = await this.client.indices.getSettings({ index, name: 'index.uuid', flat_settings: true });
      const uuid = (res[index]?.settings as Record<string, unknown> | undefined)?.['index.uuid'];
      const value = typeof uuid === 'string' ? uuid : undefined;
      this.cache.set(index, { uuid: value, at: this.now() });
      return value;
    } catch (err) {
      const status = (err as { meta?: { statusCode?: number } }).meta?.statusCode;
      // Missing: no epoch until the worker creates it. Anything else: unknown for now, ask again.
      if (status === 404) this.cache.set(index, { uuid: undefined, at: this.now() });
      return undefined;
    }
  }
}
