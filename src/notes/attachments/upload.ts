import { hex } from "../../lib/encoding";
import { Sniffer, type SniffedType } from "./sniff";

/**
 * An upload's bytes, streamed from the request into R2: never held whole in the Worker. Each chunk on its way
 * is counted, hashed (SHA-256) and sniffed, then written to a stream of exactly the declared length, which R2
 * takes as an object of that size. A body longer than its Content-Length is stopped at the first byte too
 * many, a shorter one at its end: R2 then refuses the object, and nothing is stored.
 */

/** The body did not have the length its Content-Length said. */
export class LengthMismatch extends Error {
  override name = "LengthMismatch";
}

/** The body was still arriving at the upload's deadline. */
export class TooSlow extends Error {
  override name = "TooSlow";
}

/** What the bytes turned out to be. */
export interface StoredBytes {
  sha256: string;
  contentType: SniffedType;
}

/** What an upload streams: the request's body, its declared length, and when it must have arrived by. */
export interface UploadBody {
  body: ReadableStream<Uint8Array> | null;
  length: number;
  deadline: number;
}

/**
 * Bytes per read of the body. The runtime hands a request's body over in small chunks; read into a buffer of
 * this size instead, far fewer pass through JavaScript, which is most of what an upload costs in CPU.
 */
export const READ_BYTES = 256 * 1024;

/**
 * The body's bytes in chunks of up to READ_BYTES, all read into one buffer: the caller has written each chunk
 * (the writes resolved: the hash and R2's stream have taken its bytes) before it asks for the next, so the
 * Worker holds one buffer whatever the file's size, and makes no garbage. A stream that is not a byte stream
 * (one made in JavaScript) is read as it comes.
 */
async function* chunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  let bytes: ReadableStreamBYOBReader | undefined;
  try {
    bytes = body.getReader({ mode: "byob" });
  } catch {
    // A stream made in JavaScript (not a request's body): read it as it comes.
  }
  if (!bytes) {
    const reader = body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) yield read.value;
    return;
  }
  let buffer = new Uint8Array(READ_BYTES);
  for (;;) {
    const { done, value } = await bytes.readAtLeast(READ_BYTES, buffer);
    if (value && value.byteLength > 0) yield value;
    if (done || !value) return;
    // The read took the buffer over (BYOB); its memory comes back in `value`, to be read into again.
    buffer = new Uint8Array(value.buffer);
  }
}

/**
 * Streams `upload` into `bucket` as `key`: its hash and type once R2 has the whole object. Throws
 * LengthMismatch or TooSlow (no object is left), or R2's own error.
 */
export async function streamToR2(bucket: R2Bucket, key: string, upload: UploadBody): Promise<StoredBytes> {
  const digest = new crypto.DigestStream("SHA-256");
  const hashing = digest.getWriter();
  const fixed = new FixedLengthStream(upload.length);
  const storing = fixed.writable.getWriter();
  const put = bucket.put(key, fixed.readable);
  // Both settle however the upload ends; each is awaited below when it matters.
  digest.digest.catch(() => undefined);
  put.catch(() => undefined);
  const sniffer = new Sniffer();
  try {
    let received = 0;
    for await (const chunk of chunksOf(upload.body ?? emptyStream())) {
      received += chunk.byteLength;
      if (received > upload.length) throw new LengthMismatch();
      if (Date.now() > upload.deadline) throw new TooSlow();
      sniffer.feed(chunk);
      await hashing.write(chunk);
      await storing.write(chunk);
    }
    if (received !== upload.length) throw new LengthMismatch();
    await Promise.all([hashing.close(), storing.close()]);
  } catch (err) {
    // An aborted stream makes R2 refuse the object: nothing is stored.
    await Promise.allSettled([storing.abort(err), hashing.abort(err)]);
    if (err instanceof LengthMismatch || err instanceof TooSlow) throw err;
    // Our writes fail when R2 does: its own error says why.
    throw (
      (await put.then(
        () => undefined,
        (failure: unknown) => failure,
      )) ?? err
    );
  }
  await put;
  return { sha256: hex(new Uint8Array(await digest.digest)), contentType: sniffer.type() };
}

function emptyStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({ start: (controller) => controller.close() });
}
