/**
 * A software WebAuthn authenticator for the tests (and the bench's passkey sign-in): a P-256 key from
 * WebCrypto, authenticator data built byte by byte, attestation "none" in CBOR, and assertions signed as
 * an authenticator signs them (ECDSA over authenticator data ‖ SHA-256(clientDataJSON), DER-encoded). It
 * answers what a browser's `PublicKeyCredential.toJSON()` gives, so requests carry exactly what apps send.
 * Every part a test may want wrong can be set: origin, RP ID, flags, counter, user handle, challenge.
 *
 * No imports: it runs in the Workers runtime (vitest) and in Node (bench/scenarios.ts) alike.
 */

export const DEV_ORIGIN = "http://localhost:8787";
export const RP_ID = "localhost";

const FLAG = { up: 0x01, uv: 0x04, be: 0x08, bs: 0x10, at: 0x40 } as const;

export function b64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromB64url(text: string): Uint8Array {
  return Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (char) => char.charCodeAt(0));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

const utf8 = (text: string) => new TextEncoder().encode(text);

// CBOR (RFC 8949), the little of it WebAuthn needs: unsigned and negative integers, byte and text strings, maps.
type Cbor = number | string | Uint8Array | Map<Cbor, Cbor>;

function cborHead(major: number, length: number): Uint8Array {
  if (length < 24) return Uint8Array.of((major << 5) | length);
  if (length < 0x100) return Uint8Array.of((major << 5) | 24, length);
  if (length < 0x10000) return Uint8Array.of((major << 5) | 25, length >> 8, length & 0xff);
  return Uint8Array.of((major << 5) | 26, length >>> 24, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff);
}

export function cbor(value: Cbor): Uint8Array {
  if (typeof value === "number") return value >= 0 ? cborHead(0, value) : cborHead(1, -1 - value);
  if (typeof value === "string") return concat(cborHead(3, utf8(value).length), utf8(value));
  if (value instanceof Uint8Array) return concat(cborHead(2, value.length), value);
  return concat(cborHead(5, value.size), ...[...value].flatMap(([key, item]) => [cbor(key), cbor(item)]));
}

/** An ECDSA signature as WebCrypto gives it (r ‖ s, 32 bytes each) in the DER form WebAuthn carries. */
function derSignature(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    const trimmed = bytes.slice(i);
    const body = trimmed[0]! & 0x80 ? concat(Uint8Array.of(0), trimmed) : trimmed;
    return concat(Uint8Array.of(0x02, body.length), body);
  };
  const sequence = concat(integer(raw.slice(0, 32)), integer(raw.slice(32)));
  return concat(Uint8Array.of(0x30, sequence.length), sequence);
}

/** A key pair as WebCrypto makes it (named here: Node's types have neither CryptoKeyPair nor CryptoKey as globals). */
type Key = Parameters<typeof crypto.subtle.exportKey>[1];
interface KeyPair {
  publicKey: Key;
  privateKey: Key;
}

export interface Flags {
  up?: boolean;
  uv?: boolean;
  /** Backup eligible: a passkey that may be synced (`swk`); without it the key is device-bound (`hwk`). */
  be?: boolean;
  /** Backed up. */
  bs?: boolean;
}

function flagByte(flags: Flags, attested: boolean): number {
  const { up = true, uv = true, be = false, bs = false } = flags;
  return (up ? FLAG.up : 0) | (uv ? FLAG.uv : 0) | (be ? FLAG.be : 0) | (bs ? FLAG.bs : 0) | (attested ? FLAG.at : 0);
}

function counterBytes(counter: number): Uint8Array {
  return Uint8Array.of(counter >>> 24, (counter >> 16) & 0xff, (counter >> 8) & 0xff, counter & 0xff);
}

export interface CeremonyOverrides {
  origin?: string;
  rpId?: string;
  type?: string;
  challenge?: string;
  flags?: Flags;
}

function clientData(type: string, challenge: string, origin: string): Uint8Array {
  return utf8(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
}

/** One passkey: its key pair, credential id and signature counter, held as an authenticator holds them. */
export class SoftwarePasskey {
  readonly credentialId: Uint8Array;
  /** The signature counter the next assertion carries; stays 0 when `counting` is false (as synced passkeys do). */
  counter = 0;
  userHandle = "";

  private readonly keys: KeyPair;
  readonly counting: boolean;
  readonly flags: Flags;

  private constructor(keys: KeyPair, counting: boolean, flags: Flags, credentialId: Uint8Array) {
    this.keys = keys;
    this.credentialId = credentialId;
    this.counting = counting;
    this.flags = flags;
  }

  /** A new passkey; `credentialId` another's id (an impostor: the same id, another key). */
  static async create({
    counting = true,
    flags = {},
    credentialId,
  }: { counting?: boolean; flags?: Flags; credentialId?: Uint8Array } = {}): Promise<SoftwarePasskey> {
    const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as KeyPair;
    return new SoftwarePasskey(keys, counting, flags, credentialId ?? crypto.getRandomValues(new Uint8Array(32)));
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  /** The COSE_Key of the public key (EC2, ES256, P-256). */
  async coseKey(): Promise<Uint8Array> {
    const raw = new Uint8Array((await crypto.subtle.exportKey("raw", this.keys.publicKey)) as ArrayBuffer);
    return cbor(
      new Map<Cbor, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, raw.slice(1, 33)],
        [-3, raw.slice(33, 65)],
      ]),
    );
  }

  /** What navigator.credentials.create() answers for `options` (the `options` of register/options), as JSON. */
  async register(
    options: { challenge: string; rp: { id: string }; user: { id: string } },
    overrides: CeremonyOverrides = {},
  ) {
    this.userHandle = options.user.id;
    const attestedCredential = concat(
      new Uint8Array(16),
      Uint8Array.of(this.credentialId.length >> 8, this.credentialId.length & 0xff),
      this.credentialId,
      await this.coseKey(),
    );
    const authData = concat(
      await sha256(utf8(overrides.rpId ?? options.rp.id)),
      Uint8Array.of(flagByte({ ...this.flags, ...overrides.flags }, true)),
      counterBytes(this.counter),
      attestedCredential,
    );
    const attestationObject = cbor(
      new Map<Cbor, Cbor>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", authData],
      ]),
    );
    const data = clientData(
      overrides.type ?? "webauthn.create",
      overrides.challenge ?? options.challenge,
      overrides.origin ?? DEV_ORIGIN,
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: {
        clientDataJSON: b64url(data),
        attestationObject: b64url(attestationObject),
        transports: ["internal", "hybrid"],
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: { credProps: { rk: true } },
    };
  }

  /**
   * What navigator.credentials.get() answers for `options` (the `options` of login/options), as JSON: the
   * counter moves on first when the passkey counts. `userHandle: null` sends none (nor does a passkey never
   * registered).
   */
  async assert(
    options: { challenge: string; rpId: string },
    overrides: CeremonyOverrides & { counter?: number; userHandle?: string | null } = {},
  ) {
    if (this.counting) this.counter++;
    const authData = concat(
      await sha256(utf8(overrides.rpId ?? options.rpId)),
      Uint8Array.of(flagByte({ ...this.flags, ...overrides.flags }, false)),
      counterBytes(overrides.counter ?? this.counter),
    );
    const data = clientData(
      overrides.type ?? "webauthn.get",
      overrides.challenge ?? options.challenge,
      overrides.origin ?? DEV_ORIGIN,
    );
    const signed = concat(authData, await sha256(data));
    const signature = derSignature(
      new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.keys.privateKey, signed)),
    );
    const userHandle = overrides.userHandle === undefined ? this.userHandle : overrides.userHandle;
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: {
        clientDataJSON: b64url(data),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        ...(userHandle ? { userHandle } : {}),
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
    };
  }
}
