import kafkajs from 'kafkajs';

/**
 * kafkajs reads only gzip by itself: a record batch compressed with snappy, lz4 or zstd (what
 * most producers of any volume are set to) makes its fetch throw and the consumer stop. These
 * are the codecs it is missing, in the shape of its gzip codec: `compress` gets kafkajs's
 * encoder, `decompress` one batch's records as bytes.
 */
export interface KafkaCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

/**
 * A codec's module, loaded by the first batch that needs it: the three cost a worker resident
 * memory that a deployment whose producers do not compress should not pay.
 * A module that cannot load here (a platform without a prebuilt binary) matters only once a
 * batch of its codec comes, and the error says which module and why.
 */
export function onFirstUse<M>(codec: string, module: string, load: () => Promise<M>): () => Promise<M> {
  let loaded: Promise<M> | undefined;
  return () =>
    (loaded ??= load().catch((err: unknown) => {
      throw new Error(
        `${codec}: the module "${module}" did not load on ${process.platform}-${process.arch}: ${(err as Error).message}`,
      );
    }));
}

const snappyModule = onFirstUse('snappy', 'snappy', () => import('snappy'));
const lz4Module = onFirstUse('lz4', 'lz4-napi', () => import('lz4-napi'));
const zstdModule = onFirstUse('zstd', 'fzstd', () => import('fzstd'));

/**
 * snappy-java's stream framing, which the Java client writes: an 8-byte magic, two 4-byte
 * versions, then chunks of a 4-byte big-endian length and that many bytes of raw snappy.
 * librdkafka and kafkajs's community codec write raw snappy instead; both are read.
 */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;

async function snappyUncompressBuffer(bytes: Buffer): Promise<Buffer> {
  return (await (await snappyModule()).uncompress(bytes, { asBuffer: true })) as Buffer;
}

export async function snappyDecompress(buffer: Buffer): Promise<Buffer> {
  const framed =
    buffer.length >= XERIAL_HEADER_BYTES && buffer.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
  if (!framed) return snappyUncompressBuffer(buffer);
  const chunks: Buffer[] = [];
  for (let at = XERIAL_HEADER_BYTES; at < buffer.length; ) {
    const size = at + 4 <= buffer.length ? buffer.readUInt32BE(at) : -1;
    if (size < 0 || at + 4 + size > buffer.length) {
      throw new Error(
        `snappy: a chunk at byte ${at} of a ${buffer.length}-byte record batch runs past its end (Java framing)`,
      );
    }
    chunks.push(await snappyUncompressBuffer(buffer.subarray(at + 4, at + 4 + size)));
    at += 4 + size;
  }
  return Buffer.concat(chunks);
}

const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

export const snappyCodec: KafkaCodec = {
  // Raw snappy, as librdkafka writes it: every client reads it, snappy-java included.
  compress: async (encoder) => (await snappyModule()).compress(encoder.buffer),
  decompress: snappyDecompress,
};

/** The LZ4 frame format (Kafka's since message format 1); native, off the event loop. */
export const lz4Codec: KafkaCodec = {
  compress: async (encoder) => (await lz4Module()).compressFrame(encoder.buffer),
  decompress: async (buffer) => (await lz4Module()).decompressFrame(buffer),
};

/**
 * zstd is read (a pure-JavaScript decoder: nothing to build or download) but not written:
 * nothing in rxingest produces with it, and the readers need no native module.
 */
export const zstdCodec: KafkaCodec = {
  compress: async () => {
    throw new Error('zstd: rxingest reads zstd-compressed batches but does not write them; use lz4 or gzip');
  },
  decompress: async (buffer) => asBuffer((await zstdModule()).decompress(buffer)),
};

/**
 * Gives kafkajs the codecs it lacks. kafkajs keeps them in one table of its own, so this is
 * called where every client is made; calling it again changes nothing.
 */
export function supportAllCompressionCodecs(): void {
  // A default import: node's ESM loader finds no named export of these in kafkajs's CommonJS.
  const { CompressionCodecs, CompressionTypes } = kafkajs;
  CompressionCodecs[CompressionTypes.Snappy] = () => snappyCodec;
  CompressionCodecs[CompressionTypes.LZ4] = () => lz4Codec;
  CompressionCodecs[CompressionTypes.ZSTD] = () => zstdCodec;
}
