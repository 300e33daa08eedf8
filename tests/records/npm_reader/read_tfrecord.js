// Reads a TFRecord file with the npm `tfrecord` package (its RecordReader
// checks both masked CRC32Cs of every record; its Example parses each one)
// and prints one JSON line per record: payload size, SHA-256, and the
// feature names of the tf.train.Example. The package reads uncompressed
// files only, so GZIP and ZLIB files are inflated first with Node's zlib, as
// a Node user would.
//
//   node read_tfrecord.js FILE none|gzip|zlib
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const tfrecord = require('tfrecord');

async function main() {
  const [file, compression] = process.argv.slice(2);
  const inflate = { none: (b) => b, gzip: zlib.gunzipSync, zlib: zlib.inflateSync }[compression];
  if (!file || !inflate) throw new Error('usage: read_tfrecord.js FILE none|gzip|zlib');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-npm-tfrecord-'));
  try {
    const plain = path.join(dir, 'plain.tfrecord');
    fs.writeFileSync(plain, inflate(fs.readFileSync(file)));
    const reader = await tfrecord.RecordReader.create(plain);
    let record;
    while ((record = await reader.readRecord()) !== null) {
      const example = tfrecord.Example.decode(record);
      const features = Object.keys(example.features.feature).sort();
      const sha256 = crypto.createHash('sha256').update(record).digest('hex');
      process.stdout.write(JSON.stringify({ bytes: record.length, sha256, features }) + '\n');
    }
    await reader.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`read_tfrecord.js: ${e.message}\n`);
  process.exit(1);
});
