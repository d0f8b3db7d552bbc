/**
 * What an attachment's bytes are, decided by the service from the bytes alone (never from the client's name or
 * header): a few types a browser shows but never runs, recognised by their first bytes; plain text, when every
 * byte is valid UTF-8 without a NUL and it does not open like markup; everything else a download of
 * unknown type. A browser runs HTML, SVG, XML and JavaScript: none of them is ever one of these types.
 */

export const SNIFFED_TYPES = [
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "application/pdf",
  "text/plain; charset=utf-8",
  "application/octet-stream",
] as const;
export type SniffedType = (typeof SNIFFED_TYPES)[number];

/** The types a browser shows in place (`Content-Disposition: inline`); any other is a download. */
export const SHOWN_INLINE: ReadonlySet<SniffedType> = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "application/pdf",
]);

const ascii = (text: string) => [...text].map((char) => char.charCodeAt(0));

/** Each type's signature: bytes at an offset (null: any byte). */
const SIGNATURES: readonly { type: SniffedType; bytes: readonly (number | null)[] }[] = [
  { type: "image/png", bytes: [0x89, ...ascii("PNG\r\n\x1a\n")] },
  { type: "image/jpeg", bytes: [0xff, 0xd8, 0xff] },
  { type: "image/gif", bytes: ascii("GIF87a") },
  { type: "image/gif", bytes: ascii("GIF89a") },
  { type: "image/webp", bytes: [...ascii("RIFF"), null, null, null, null, ...ascii("WEBP")] },
  { type: "application/pdf", bytes: ascii("%PDF-") },
];

/** Bytes the signatures need. */
const HEAD_BYTES = Math.max(...SIGNATURES.map((signature) => signature.bytes.length));

const WHITE_SPACE = new Set([0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf];
const LESS_THAN = 0x3c;

/**
 * Fed every chunk of a file in order, it names the file's type at the end (`type()`). It keeps a few bytes
 * and no text: UTF-8 is checked chunk by chunk (a sequence cut between chunks included), and only while the
 * file can still be text.
 */
export class Sniffer {
  private readonly head = new Uint8Array(HEAD_BYTES);
  private headLength = 0;
  private offset = 0;
  private signature: SniffedType | undefined;
  /** Whether every byte so far is UTF-8 without a NUL, and nothing but white space has come yet. */
  private text = true;
  private opening: "white space" | "markup" | "other" = "white space";
  private readonly utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

  feed(chunk: Uint8Array): void {
    if (this.headLength < HEAD_BYTES) this.keepHead(chunk);
    if (this.text) this.checkText(chunk);
    this.offset += chunk.byteLength;
  }

  type(): SniffedType {
    if (this.signature ?? (this.signature = signatureOf(this.head.subarray(0, this.headLength)))) return this.signature;
    if (this.text) {
      try {
        this.utf8.decode();
      } catch {
        this.text = false;
      }
    }
    return this.text && this.opening !== "markup" ? "text/plain; charset=utf-8" : "application/octet-stream";
  }

  private keepHead(chunk: Uint8Array): void {
    const taken = chunk.subarray(0, HEAD_BYTES - this.headLength);
    this.head.set(taken, this.headLength);
    this.headLength += taken.byteLength;
    // A known signature settles the type: the rest need not be read as text.
    if (this.headLength === HEAD_BYTES) this.signature = signatureOf(this.head);
    if (this.signature) this.text = false;
  }

  private checkText(chunk: Uint8Array): void {
    if (chunk.includes(0)) {
      this.text = false;
      return;
    }
    try {
      this.utf8.decode(chunk, { stream: true });
    } catch {
      this.text = false;
      return;
    }
    if (this.opening === "white space") this.opening = openingOf(chunk, this.offset);
  }
}

/** The type whose signature `head` starts with, if any. */
function signatureOf(head: Uint8Array): SniffedType | undefined {
  return SIGNATURES.find(
    ({ bytes }) => head.byteLength >= bytes.length && bytes.every((byte, i) => byte === null || head[i] === byte),
  )?.type;
}

/**
 * How a text opens, from `chunk` at `offset` in the file: with `<` after any white space (and byte order mark),
 * as HTML, SVG and XML do, it is markup, served only as a download of unknown type.
 */
function openingOf(chunk: Uint8Array, offset: number): "white space" | "markup" | "other" {
  for (let i = 0; i < chunk.byteLength; i++) {
    const byte = chunk[i]!;
    const bom = offset + i < BYTE_ORDER_MARK.length && byte === BYTE_ORDER_MARK[offset + i];
    if (bom || WHITE_SPACE.has(byte)) continue;
    return byte === LESS_THAN ? "markup" : "other";
  }
  return "white space";
}
