import { describe, expect, it } from "vitest";
import { open, seal, sealedUnder } from "../../src/lib/secret-box";

describe("secret boxes (AES-256-GCM under a key derived from a secret binding)", () => {
  const plain = crypto.getRandomValues(new Uint8Array(20));
  const current = "the current key, long enough";
  const previous = "the previous key, long enough";

  it("opens what it sealed, under the current key or a previous one, and names the key", async () => {
    const box = await seal(plain, current);
    expect(await open(box, [current])).toEqual(plain);
    expect(await open(await seal(plain, previous), [current, previous])).toEqual(plain);
    expect(await sealedUnder(box, current)).toBe(true);
    expect(await sealedUnder(box, previous)).toBe(false);
  });

  it("seals the same secret differently each time (a fresh IV)", async () => {
    expect(await seal(plain, current)).not.toBe(await seal(plain, current));
  });

  it("opens nothing under another key, nor a box altered by one character", async () => {
    const box = await seal(plain, current);
    expect(await open(box, [previous])).toBeUndefined();
    const last = box.at(-1) === "A" ? "B" : "A";
    expect(await open(`${box.slice(0, -1)}${last}`, [current])).toBeUndefined();
    expect(await open("not a box", [current])).toBeUndefined();
  });
});
