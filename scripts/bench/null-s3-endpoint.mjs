// An S3 endpoint that keeps nothing, for `npm run bench`: it reads a PUT's body to its end and
// remembers only its length; a GET gets that many bytes (0x5a, as the bench writes them) from
// one reused buffer, with the headers the store sends: ETag, Last-Modified, and the CRC32
// checksum the SDK asks for and checks. Signatures are not checked. What the SDK does against it
// is the client's own share of a transfer on this machine: the ceiling of any endpoint measured
// through the SDK here. Plain JavaScript, started by the bench as is.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import { crc32 } from 'node:zlib';

// Written in pieces of the store's size (blobs.ts SEND_CHUNK), each once the last one is taken.
const CHUNK = Buffer.alloc(256 * 1024, 0x5a);
const etag = '"9d3a7b3f1c1e5e0e8d6c1f3a2b4c5d6e"';
const lastModified = new Date().toUTCString();
/** Length of each key PUT; the CRC32 of each length served (computed once). */
const lengths = new Map();
const checksums = new Map();

function checksumOf(size) {
  if (!checksums.has(size)) {
    let value = 0;
    for (let done = 0; done < size; done += CHUNK.length) value = crc32(CHUNK.subarray(0, Math.min(CHUNK.length, size - done)), value);
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(value >>> 0);
    checksums.set(size, bytes.toString('base64'));
  }
  return checksums.get(size);
}

/** Writes `size` bytes, two pieces in flight at most (as the store sends a file through two buffers). */
function send(res, size) {
  let sent = 0;
  let inFlight = 0;
  const more = () => {
    while (inFlight < 2 && sent < size) {
      const piece = CHUNK.subarray(0, Math.min(CHUNK.length, size - sent));
      sent += piece.length;
      inFlight++;
      res.write(piece, () => {
        inFlight--;
        more();
      });
    }
    if (sent >= size && inFlight === 0 && !res.writableEnded) res.end();
  };
  more();
}

createServer((req, res) => {
  res.setHeader('x-amz-request-id', 'NULL');
  const key = req.url.split('?')[0];
  if (req.method === 'PUT') {
    let size = 0;
    const decoded = Number(req.headers['x-amz-decoded-content-length'] ?? req.headers['content-length'] ?? 0);
    req.on('data', (chunk) => (size += chunk.length));
    req.on('end', () => {
      lengths.set(key, decoded || size);
      res.setHeader('ETag', etag);
      res.end();
    });
    return;
  }
  const size = lengths.get(key);
  if (size === undefined) {
    res.statusCode = 404;
    res.setHeader('Content-Type', 'application/xml');
    return void res.end('<Error><Code>NoSuchKey</Code></Error>');
  }
  res.writeHead(200, {
    'Content-Length': String(size),
    'Content-Type': 'binary/octet-stream',
    ETag: etag,
    'Last-Modified': lastModified,
    'Accept-Ranges': 'bytes',
    ...(String(req.headers['x-amz-checksum-mode']).toUpperCase() === 'ENABLED'
      ? { 'x-amz-checksum-crc32': checksumOf(size), 'x-amz-checksum-type': 'FULL_OBJECT' }
      : {}),
  });
  send(res, size);
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
