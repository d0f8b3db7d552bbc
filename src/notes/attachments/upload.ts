import { hex } from "../../lib/encoding";
import { Sniffer, type SniffedType } from "./sniff";

/**
 * An upload's bytes, streamed from the request into R2: never held whole in the Worker. Each chunk on its way
 * is counted, hashed (SHA-256) and sniffed, then passed on to a stream of exactly the declared length, which
 * R2 takes as an object of that size. A body longer than its Content-Length is stopped at the first byte too
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
 * Streams `upload` into `bucket` as `key`: its hash and type once R2 has the whole object. Throws
 * LengthMismatch or TooSlow (no object is left), or R2's own error.
 */
export async function streamToR2(bucket: R2Bucket, key: string, upload: UploadBody): Promise<StoredBytes> {
  const digest = new crypto.DigestStream("SHA-256");
  // Rejects when the upload fails, and is then read by nobody.
  digest.digest.catch(() => undefined);
  const hashing = digest.getWriter();
  const sniffer = new Sniffer();
  let received = 0;
  const checked = new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, controller) {
      received += chunk.byteLength;
      if (received > upload.length) throw new LengthMismatch();
      if (Date.now() > upload.deadline) throw new TooSlow();
      sniffer.feed(chunk);
      await hashing.write(chunk);
      controller.enqueue(chunk);
    },
    async flush() {
      if (received !== upload.length) throw new LengthMismatch();
      await hashing.close();
    },
  });
  const fixed = new FixedLengthStream(upload.length);
  const piped = (upload.body ?? emptyStream()).pipeThrough(checked).pipeTo(fixed.writable);
  const [pipe, put] = await Promise.allSettled([piped, bucket.put(key, fixed.readable)]);
  if (pipe.status === "rejected") {
    await hashing.abort().catch(() => undefined);
    // Our own reason first: R2's error then only says that its stream failed.
    if (pipe.reason instanceof LengthMismatch || pipe.reason instanceof TooSlow) throw pipe.reason;
  }
  if (put.status === "rejected") throw put.reason;
  if (pipe.status === "rejected") throw pipe.reason;
  return { sha256: hex(new Uint8Array(await digest.digest)), contentType: sniffer.type() };
}

function emptyStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({ start: (controller) => controller.close() });
}
