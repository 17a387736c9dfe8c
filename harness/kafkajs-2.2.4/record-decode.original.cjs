// kafkajs 2.2.4's record decoding as published (MIT License, Copyright (c) 2018 Túlio
// Ornelas): src/protocol/recordBatch/record/v0/decoder.js, decodeRecord of
// src/protocol/recordBatch/v0/decoder.js and the fetched-offset filter of
// src/consumer/batch.js. Kept as the oracle the decoding patch is tested against and the
// hot-path bench's baseline. One change: the requires point into the installed kafkajs.
const Long = require('kafkajs/src/utils/long')
const Decoder = require('kafkajs/src/protocol/decoder')
const HeaderDecoder = require('kafkajs/src/protocol/recordBatch/header/v0/decoder')
const TimestampTypes = require('kafkajs/src/protocol/timestampTypes')

const RecordDecoder = (decoder, batchContext = {}) => {
  const {
    firstOffset,
    firstTimestamp,
    magicByte,
    isControlBatch = false,
    timestampType,
    maxTimestamp,
  } = batchContext
  const attributes = decoder.readInt8()

  const timestampDelta = decoder.readVarLong()
  const timestamp =
    timestampType === TimestampTypes.LOG_APPEND_TIME && maxTimestamp
      ? maxTimestamp
      : Long.fromValue(firstTimestamp)
          .add(timestampDelta)
          .toString()

  const offsetDelta = decoder.readVarInt()
  const offset = Long.fromValue(firstOffset)
    .add(offsetDelta)
    .toString()

  const key = decoder.readVarIntBytes()
  const value = decoder.readVarIntBytes()
  const headers = decoder.readVarIntArray(HeaderDecoder).reduce(
    (obj, { key, value }) => ({
      ...obj,
      [key]:
        obj[key] === undefined
          ? value
          : Array.isArray(obj[key])
          ? obj[key].concat([value])
          : [obj[key], value],
    }),
    {}
  )

  return {
    magicByte,
    attributes, // Record level attributes are presently unused
    timestamp,
    offset,
    key,
    value,
    headers,
    isControlRecord: isControlBatch,
    batchContext,
  }
}

const decodeRecord = (decoder, recordContext) => {
  const recordBuffer = decoder.readVarIntBytes()
  return RecordDecoder(new Decoder(recordBuffer), recordContext)
}

/** Upstream's decoding of an uncompressed batch's records, from the reader after the count. */
const decodeRecords = (decoder, recordContext) =>
  decoder.readArray(d => decodeRecord(d, recordContext))

const withinOffset = (messages, fetchedOffset) => {
  const longFetchedOffset = Long.fromValue(fetchedOffset)
  return messages.filter(message => Long.fromValue(message.offset).gte(longFetchedOffset))
}

module.exports = { RecordDecoder, decodeRecord, decodeRecords, withinOffset }
