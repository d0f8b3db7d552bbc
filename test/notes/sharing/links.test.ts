import * as v from "valibot";
import { beforeEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../../src/lib/crypto";
import { NoteMessage } from "../../../src/notes/messages";
import { SharingMessage } from "../../../src/notes/sharing/messages";
import { LINK_TOKEN_BYTES, MAX_LINKS_PER_NOTE } from "../../../src/notes/sharing/policy";
import { NewLink, SharedNote } from "../../../src/notes/sharing/shapes";
import { call, callWithEnv, tally } from "../../support/app";
import { deleteAccount, expectJson, linked, Links, noteOf, openLink, person, rows, shared } from "./support";

/** Public links (items 1 to 4 of issue 45): made, listed and revoked by the owner, opened by anyone with the token. */

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** base64url without padding: 6 bits a character. */
const TOKEN_CHARS = Math.ceil((LINK_TOKEN_BYTES * 8) / 6);

describe("POST /notes/{id}/links", () => {
  it(`answers 201 with an id, a token of ${LINK_TOKEN_BYTES * 8} random bits in ${TOKEN_CHARS} URL-safe characters, its URL and the time`, async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const response = await owner.send("POST", `/notes/${note.id}/links`);
    expect(response.status).toBe(201);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body: unknown = await response.json();
    expect(Object.keys(v.parse(v.record(v.string(), v.unknown()), body))).toEqual(["id", "token", "url", "created_at"]);
    const link = v.parse(NewLink, body);
    expect(link.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // The floor: at least 22 URL-safe characters, 128 random bits.
    expect(LINK_TOKEN_BYTES * 8).toBeGreaterThanOrEqual(128);
    expect(link.token).toMatch(new RegExp(`^[A-Za-z0-9_-]{${TOKEN_CHARS}}$`));
    expect(link.url).toBe(`http://api.test/shared/${link.token}`);
    expect(link.created_at).toMatch(ISO);
    expect((await linked(owner, note.id)).token).not.toBe(link.token);
  });

  it("stores only the token's SHA-256", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const link = await linked(owner, note.id);
    const stored = await rows("note_links", "note_id = ?", note.id);
    expect(stored).toEqual([
      {
        id: link.id,
        note_id: note.id,
        token_hash: await sha256Hex(link.token),
        created_at: Date.parse(link.created_at),
      },
    ]);
    expect(JSON.stringify(stored)).not.toContain(link.token);
  });

  it(`allows ${MAX_LINKS_PER_NOTE} live links per note, then 409; revoking one frees its place`, async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const links = [];
    for (let i = 0; i < MAX_LINKS_PER_NOTE; i++) links.push(await linked(owner, note.id));
    await expectJson(await owner.send("POST", `/notes/${note.id}/links`), 409, { error: SharingMessage.tooManyLinks });
    expect((await owner.send("DELETE", `/notes/${note.id}/links/${links[0]!.id}`)).status).toBe(204);
    expect((await owner.send("POST", `/notes/${note.id}/links`)).status).toBe(201);
  });

  it(`makes exactly ${MAX_LINKS_PER_NOTE} links of a burst of 30`, async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const answers = await Promise.all(Array.from({ length: 30 }, () => owner.send("POST", `/notes/${note.id}/links`)));
    expect(tally(answers)).toEqual({ 201: MAX_LINKS_PER_NOTE, 409: 30 - MAX_LINKS_PER_NOTE });
    expect(await rows("note_links", "note_id = ?", note.id)).toHaveLength(MAX_LINKS_PER_NOTE);
  });

  it("answers a grantee 403 and anyone else the contract's 404; nothing is made", async () => {
    const owner = await person();
    const grantee = await person();
    const stranger = await person();
    const note = await noteOf(owner);
    await shared(owner, note.id, grantee.email, "editor");
    await expectJson(await grantee.send("POST", `/notes/${note.id}/links`), 403, { error: SharingMessage.ownerOnly });
    await expectJson(await stranger.send("POST", `/notes/${note.id}/links`), 404, { error: NoteMessage.notFound });
    await expectJson(await owner.send("POST", "/notes/999999999/links"), 404, { error: NoteMessage.notFound });
    await expectJson(await owner.send("POST", "/notes/abc/links"), 400, { error: NoteMessage.invalidId });
    expect(await rows("note_links", "note_id = ?", note.id)).toEqual([]);
  });

  it("needs a token (401), and accounts: with public notes every sharing route answers 404 saying so", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const unauthorized = await callWithEnv({ NOTES_AUTH: "required" }, "POST", `/notes/${note.id}/links`);
    await expectJson(unauthorized, 401, { error: NoteMessage.unauthorized });
    const needsAccounts = { error: SharingMessage.needsAccounts };
    await expectJson(await call("POST", `/notes/${note.id}/links`), 404, needsAccounts);
    await expectJson(await call("GET", `/notes/${note.id}/links`), 404, needsAccounts);
    await expectJson(await call("DELETE", `/notes/${note.id}/links/x`), 404, needsAccounts);
    await expectJson(
      await call("POST", `/notes/${note.id}/shares`, { email: "a@example.com", role: "viewer" }),
      404,
      needsAccounts,
    );
    await expectJson(await call("GET", `/notes/${note.id}/shares`), 404, needsAccounts);
    await expectJson(await call("PATCH", `/notes/${note.id}/shares/x`, { role: "viewer" }), 404, needsAccounts);
    await expectJson(await call("DELETE", `/notes/${note.id}/shares/x`), 404, needsAccounts);
    await expectJson(await call("GET", `/shared/${"a".repeat(43)}`), 404, needsAccounts);
    await expectJson(await call("GET", "/notes?shared=true"), 400, { error: NoteMessage.sharedNeedsAccounts });
  });
});

describe("GET /notes/{id}/links", () => {
  it("lists the live links oldest first, without their tokens; owner only", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const first = await linked(owner, note.id);
    const second = await linked(owner, note.id);
    const response = await owner.send("GET", `/notes/${note.id}/links`);
    expect(response.status).toBe(200);
    expect(v.parse(Links, await response.json())).toEqual([
      { id: first.id, created_at: first.created_at },
      { id: second.id, created_at: second.created_at },
    ]);
    await shared(owner, note.id, grantee.email);
    await expectJson(await grantee.send("GET", `/notes/${note.id}/links`), 403, { error: SharingMessage.ownerOnly });
    await expectJson(await (await person()).send("GET", `/notes/${note.id}/links`), 404, {
      error: NoteMessage.notFound,
    });
  });
});

describe("DELETE /notes/{id}/links/{linkId}", () => {
  it("revokes at once: the next GET /shared/{token} is a 404, and the link is gone from the list", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const link = await linked(owner, note.id);
    expect((await openLink(link.token)).status).toBe(200);
    const revoked = await owner.send("DELETE", `/notes/${note.id}/links/${link.id}`);
    expect(revoked.status).toBe(204);
    expect(await revoked.text()).toBe("");
    await expectJson(await openLink(link.token), 404, { error: SharingMessage.sharedNotFound });
    await expectJson(await owner.send("GET", `/notes/${note.id}/links`), 200, []);
    await expectJson(await owner.send("DELETE", `/notes/${note.id}/links/${link.id}`), 404, {
      error: SharingMessage.linkNotFound,
    });
  });

  it("answers a grantee 403, a stranger 404, and revokes nothing for either", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const link = await linked(owner, note.id);
    await shared(owner, note.id, grantee.email, "editor");
    const path = `/notes/${note.id}/links/${link.id}`;
    await expectJson(await grantee.send("DELETE", path), 403, { error: SharingMessage.ownerOnly });
    await expectJson(await (await person()).send("DELETE", path), 404, { error: NoteMessage.notFound });
    expect((await openLink(link.token)).status).toBe(200);
  });
});

describe("GET /shared/{token}", () => {
  it("answers the note as it is now, only its title, content and times, with no-store, noindex and no-referrer", async () => {
    const owner = await person();
    const note = await noteOf(owner, "Recipe", "Flour, water");
    const link = await linked(owner, note.id);
    const first = await openLink(link.token);
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("application/json");
    expect(first.headers.get("cache-control")).toBe("no-store");
    expect(first.headers.get("x-robots-tag")).toBe("noindex");
    expect(first.headers.get("referrer-policy")).toBe("no-referrer");
    expect(await first.text()).toBe(
      JSON.stringify({
        title: "Recipe",
        content: "Flour, water",
        created_at: note.created_at,
        updated_at: note.created_at,
      }),
    );

    const edited = await owner.send("PATCH", `/notes/${note.id}`, { content: "Flour, water, salt" });
    expect(edited.status).toBe(200);
    const after = v.parse(SharedNote, await (await openLink(link.token)).json());
    expect(after.content).toBe("Flour, water, salt");
    expect(Date.parse(after.updated_at)).toBeGreaterThanOrEqual(Date.parse(note.created_at));
    expect(after.updated_at).toMatch(ISO);
    // What the link shows moves updated_at; the same values again do not.
    expect((await owner.send("PATCH", `/notes/${note.id}`, { content: "Flour, water, salt" })).status).toBe(200);
    expect(v.parse(SharedNote, await (await openLink(link.token)).json()).updated_at).toBe(after.updated_at);
  });

  it("answers 404 with the same headers for an unknown token, a malformed one, and a link whose note is deleted", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const link = await linked(owner, note.id);
    for (const token of ["A".repeat(43), "short", "bad%20token"]) {
      const response = await openLink(token);
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.headers.get("x-robots-tag")).toBe("noindex");
      await expectJson(response, 404, { error: SharingMessage.sharedNotFound });
    }
    expect((await owner.send("DELETE", `/notes/${note.id}`)).status).toBe(204);
    await expectJson(await openLink(link.token), 404, { error: SharingMessage.sharedNotFound });
    expect(await rows("note_links", "id = ?", link.id)).toEqual([]);
  });

  it("answers 404 once the owner's account is deleted", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const link = await linked(owner, note.id);
    await deleteAccount(owner);
    await expectJson(await openLink(link.token), 404, { error: SharingMessage.sharedNotFound });
    expect(await rows("note_links", "id = ?", link.id)).toEqual([]);
  });

  describe("per-client limit", () => {
    // The local limiter counts in wall-clock minutes: start with 20 s of the current one left.
    beforeEach(async () => {
      const left = 60_000 - (Date.now() % 60_000);
      if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    }, 30_000);

    it("answers 429 JSON with Retry-After after 60 in a minute from one client, unknown tokens included; others go on", async () => {
      const owner = await person();
      const link = await linked(owner, (await noteOf(owner)).id);
      const limited = { RATE_LIMITS: "on" };
      const ip = `198.51.100.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}`;
      const answers = [];
      for (let i = 0; i < 60; i++) answers.push(await openLink(i % 2 ? link.token : "A".repeat(43), limited, ip));
      expect(tally(answers)).toEqual({ 200: 30, 404: 30 });
      const over = await openLink(link.token, limited, ip);
      expect(over.headers.get("retry-after")).toBe("60");
      expect(over.headers.get("cache-control")).toBe("no-store");
      await expectJson(over, 429, { error: SharingMessage.sharedThrottled });
      expect((await openLink(link.token, limited, `other-${crypto.randomUUID()}`)).status).toBe(200);
    });
  });
});
