import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import kafkajs from 'kafkajs';
import { compressSync as snappyCompressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import {
  lz4Codec,
  onFirstUse,
  snappyCodec,
  snappyDecompress,
  supportAllCompressionCodecs,
  zstdCodec,
} from '../../../src/clients/kafka-compression.js';

const { CompressionCodecs, CompressionTypes } = kafkajs;

const text = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `record ${i % 97};`).join(''));

/** snappy-java's stream: magic, version 1, compatible version 1, then length-prefixed chunks. */
function xerialFramed(...chunks: Buffer[]): Buffer {
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
  const parts = chunks.flatMap((c) => {
    const compressed = snappyCompressSync(c);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(compressed.length);
    return [length, compressed];
  });
  return Buffer.concat([header, ...parts]);
}

/** Byte equality without vitest's element-by-element diff of large buffers. */
const sameBytes = (want: Buffer) => (got: Buffer) => Buffer.isBuffer(got) && got.equals(want);

describe('the compression codecs kafkajs lacks', () => {
  it('snappy reads raw snappy (librdkafka) and what it writes itself', async () => {
    const original = text(5_000);
    expect(await snappyDecompress(snappyCompressSync(original))).toSatisfy(sameBytes(original));
    expect(await snappyCodec.decompress(await snappyCodec.compress({ buffer: original }))).toSatisfy(
      sameBytes(original),
    );
  });

  it("snappy reads the Java client's framing chunk by chunk, in order", async () => {
    const a = text(40_000);
    const b = Buffer.from('the second chunk');
    expect(await snappyDecompress(xerialFramed(a, b))).toSatisfy(sameBytes(Buffer.concat([a, b])));
  });

  it('a framed snappy batch cut short is an error naming where, not garbage', async () => {
    const framed = xerialFramed(text(1_000));
    await expect(snappyDecompress(framed.subarray(0, framed.length - 5))).rejects.toThrow(
      /snappy: a chunk at byte 16 of a \d+-byte record batch runs past its end/,
    );
  });

  it('lz4 writes frames and reads them back', async () => {
    const original = text(30_000);
    const compressed = await lz4Codec.compress({ buffer: original });
    // An LZ4 frame starts with its magic number, 0x184D2204 little-endian.
    expect(compressed.readUInt32LE(0)).toBe(0x184d2204);
    expect(compressed.length).toBeLessThan(original.length / 5);
    expect(await lz4Codec.decompress(compressed)).toSatisfy(sameBytes(original));
  });

  it('zstd reads a frame made by the zstd tool, and refuses to write', async () => {
    // printf 'rxingest reads zstd' | zstd -c | xxd -p
    const frame = Buffer.from('28b52ffd04589900007278696e67657374207265616473207a737464ac290efe', 'hex');
    expect(String(await zstdCodec.decompress(frame))).toBe('rxingest reads zstd');
    await expect(zstdCodec.compress({ buffer: Buffer.from('x') })).rejects.toThrow(
      'zstd: rxingest reads zstd-compressed batches but does not write them; use lz4 or gzip',
    );
  });

  it("are put into kafkajs's codec table, and putting them there twice changes nothing", () => {
    supportAllCompressionCodecs();
    supportAllCompressionCodecs();
    expect(CompressionCodecs[CompressionTypes.Snappy]()).toBe(snappyCodec);
    expect(CompressionCodecs[CompressionTypes.LZ4]()).toBe(lz4Codec);
    expect(CompressionCodecs[CompressionTypes.ZSTD]()).toBe(zstdCodec);
  });

  it("loads a codec's module only when a batch of that codec comes (about 8 MB of RSS otherwise)", async () => {
    // A fresh process: which of the three modules are in node's module cache, after the codecs
    // are registered and after one lz4 batch.
    const script = `
      import { createRequire } from 'node:module';
      const { supportAllCompressionCodecs, lz4Codec } = await import(${JSON.stringify(new URL('../../../src/clients/kafka-compression.ts', import.meta.url).pathname)});
      const cache = createRequire(import.meta.url).cache;
      const loaded = () => [...new Set(Object.keys(cache).flatMap((k) => /node_modules\\/(snappy|lz4-napi|fzstd)\\//.exec(k)?.[1] ?? []))];
      supportAllCompressionCodecs();
      const before = loaded();
      await lz4Codec.decompress(await lz4Codec.compress({ buffer: Buffer.from('x') }));
      console.log(JSON.stringify({ before, after: loaded() }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ]);
    expect(JSON.parse(stdout)).toEqual({ before: [], after: ['lz4-napi'] });
  });

  it("a module that cannot load fails its codec's batches with one line naming codec, module and platform, every time", async () => {
    let attempts = 0;
    const load = onFirstUse('lz4', 'lz4-napi', async () => {
      attempts++;
      throw new Error('Cannot find native binding');
    });
    const line = `lz4: the module "lz4-napi" did not load on ${process.platform}-${process.arch}: Cannot find native binding`;
    await expect(load()).rejects.toThrow(line);
    await expect(load()).rejects.toThrow(line);
    expect(attempts).toBe(1);
  });
});
