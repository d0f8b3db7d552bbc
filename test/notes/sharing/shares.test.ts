import { env } from "cloudflare:workers";
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NoteMessage } from "../../../src/notes/messages";
import { SharingMessage } from "../../../src/notes/sharing/messages";
import {
  MAX_SHARES_PER_NOTE,
  NEW_SHARE_ADDRESSES_PER_DAY,
  SHARE_ADDRESS_WINDOW_MS,
} from "../../../src/notes/sharing/policy";
import { Share } from "../../../src/notes/sharing/shapes";
import { HOUR, MINUTE } from "../../../src/lib/units";
import { account, logIn, quietRegister, storedCode } from "../../support/accounts";
import { anotherClient, call, captureLogs, randomEmail, tally } from "../../support/app";
import { awaitMails, mailsTo, mailsWithSubject } from "../../support/mail";
import { expectJson, noteOf, person, rows, send, shared, Shares, type Person } from "./support";

/** Shares with accounts (items 5 and 6 of issue 45): made, listed, changed and ended, and what they mail. */

afterEach(() => {
  vi.restoreAllMocks();
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Without the SMTP conversation (about 0.1 s a mail), for the bursts, whose mails no test reads. */
const QUIET = { MAIL_EMAIL: " " };
const subjectFrom = (owner: Person) => `${owner.email} shared a note with you`;

/** Seeds `count` shares of note `noteId` to fresh addresses, as rows: the arrangement of the limits' tests. */
async function seedShares(noteId: number, count: number): Promise<void> {
  const insert = env.DB.prepare(
    "INSERT INTO note_shares (id, note_id, email, role, created_at) VALUES (?, ?, ?, 'viewer', ?)",
  );
  await env.DB.batch(
    Array.from({ length: count }, () => insert.bind(crypto.randomUUID(), noteId, randomEmail("seed"), Date.now())),
  );
}

/** Seeds addresses `owner` had mailed `ago` ms back (recent ones count against NEW_SHARE_ADDRESSES_PER_DAY). */
async function seedAddresses(owner: Person, emails: string[], ago = MINUTE): Promise<void> {
  const insert = env.DB.prepare("INSERT INTO share_mail_addresses (owner_id, email, mailed_at) VALUES (?, ?, ?)");
  await env.DB.batch(emails.map((email) => insert.bind(owner.userId, email, Date.now() - ago)));
}

describe("POST /notes/{id}/shares", () => {
  it("answers 201 with the share, its address normalized, and stores it reaching the verified account", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const response = await owner.send("POST", `/notes/${note.id}/shares`, {
      email: `  ${grantee.email.toUpperCase()} `,
      role: "editor",
    });
    expect(response.status).toBe(201);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body: unknown = await response.json();
    expect(Object.keys(v.parse(v.record(v.string(), v.unknown()), body))).toEqual([
      "id",
      "email",
      "role",
      "created_at",
    ]);
    const share = v.parse(Share, body);
    expect(share).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      email: grantee.email,
      role: "editor",
      created_at: expect.stringMatching(ISO),
    });
    expect(await rows("note_shares", "note_id = ?", note.id)).toEqual([
      {
        id: share.id,
        note_id: note.id,
        email: grantee.email,
        role: "editor",
        created_at: Date.parse(share.created_at),
        grantee_id: grantee.userId,
      },
    ]);
  });

  it("answers the same, byte for byte and header for header, whether or not an account holds the address", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const holder = await account();
    const nobody = randomEmail();
    expect(nobody.length).toBe(holder.length);
    const toHolder = await owner.send("POST", `/notes/${note.id}/shares`, { email: holder, role: "viewer" });
    const toNobody = await owner.send("POST", `/notes/${note.id}/shares`, { email: nobody, role: "viewer" });
    const [a, b] = [await toHolder.text(), await toNobody.text()];
    const ofA = v.parse(Share, JSON.parse(a));
    const ofB = v.parse(Share, JSON.parse(b));
    // Each share's own id, time and address in the other's place: then not one byte differs.
    expect(a.replace(ofA.id, ofB.id).replace(ofA.created_at, ofB.created_at).replace(holder, nobody)).toBe(b);
    expect(a.length).toBe(b.length);
    // Every header the same, but for what each request has of its own: its id and the database's position.
    const own: Record<string, RegExp> = { "x-request-id": /^[0-9a-f-]{36}$/, "x-d1-bookmark": /^[0-9a-f-]+$/ };
    const headers = (response: Response) =>
      [...response.headers].map(([name, value]) => {
        if (!own[name]) return [name, value];
        expect(value).toMatch(own[name]);
        return [name, `<${name}>`];
      });
    expect(toHolder.status).toBe(201);
    expect(toNobody.status).toBe(toHolder.status);
    expect(headers(toNobody)).toEqual(headers(toHolder));
    // And the same mail to both.
    const [mailA] = await awaitMails(holder, subjectFrom(owner));
    const [mailB] = await awaitMails(nobody, subjectFrom(owner));
    expect(mailB).toEqual(mailA);
  });

  it("mails the grantee that the owner shared a note, without anything of the note", async () => {
    const owner = await person();
    const grantee = randomEmail();
    const note = await noteOf(owner, "Secret plans", "nobody else");
    await shared(owner, note.id, grantee);
    const mails = await mailsWithSubject(grantee, subjectFrom(owner));
    expect(mails).toEqual([
      {
        from: "Notes API Test <sender@notes.test>",
        subject: `${owner.email} shared a note with you`,
        text: [
          `${owner.email} shared a note with you.`,
          "Sign in with this address (or register it and confirm the code we mail you) to find it among the notes shared with you.",
          "If you do not know the sender, ignore this mail.",
        ].join("\n"),
      },
    ]);
    expect(JSON.stringify(await mailsTo(grantee))).not.toContain("Secret plans");
  });

  it("refuses the owner's own address (400), whatever its case, and the same address twice (409)", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    await expectJson(
      await owner.send("POST", `/notes/${note.id}/shares`, { email: owner.email.toUpperCase(), role: "viewer" }),
      400,
      { error: SharingMessage.shareWithSelf },
    );
    const email = randomEmail();
    await shared(owner, note.id, email);
    await expectJson(await owner.send("POST", `/notes/${note.id}/shares`, { email, role: "editor" }), 409, {
      error: SharingMessage.alreadyShared,
    });
    expect(await rows("note_shares", "note_id = ?", note.id)).toHaveLength(1);
  });

  it("makes one share of 20 sent together to one address, by the unique index: 19 answers 409", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const email = randomEmail();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        send("POST", `/notes/${note.id}/shares`, { token: owner.token, body: { email, role: "viewer" }, env: QUIET }),
      ),
    );
    expect(tally(answers)).toEqual({ 201: 1, 409: 19 });
    expect(await rows("note_shares", "note_id = ?", note.id)).toHaveLength(1);
  });

  it("refuses bad input with a 400 that says what is wrong", async () => {
    const owner = await person();
    const path = `/notes/${(await noteOf(owner)).id}/shares`;
    await expectJson(await owner.send("POST", path, { role: "viewer" }), 400, { error: SharingMessage.emailRequired });
    await expectJson(await owner.send("POST", path, { email: 5, role: "viewer" }), 400, {
      error: SharingMessage.emailNotString,
    });
    await expectJson(await owner.send("POST", path, { email: "not an address", role: "viewer" }), 400, {
      error: SharingMessage.invalidEmail,
    });
    await expectJson(await owner.send("POST", path, { email: randomEmail() }), 400, {
      error: SharingMessage.roleRequired,
    });
    await expectJson(await owner.send("POST", path, { email: randomEmail(), role: "admin" }), 400, {
      error: SharingMessage.invalidRole,
    });
    await expectJson(await owner.send("POST", path, "[1]"), 400, { error: "Request body must be a JSON object." });
    await expectJson(await owner.send("POST", "/notes/1.5/shares", { email: randomEmail(), role: "viewer" }), 400, {
      error: NoteMessage.invalidId,
    });
  });

  it("answers a grantee 403 and a stranger 404", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    await shared(owner, note.id, grantee.email, "editor");
    const body = { email: randomEmail(), role: "viewer" };
    await expectJson(await grantee.send("POST", `/notes/${note.id}/shares`, body), 403, {
      error: SharingMessage.ownerOnly,
    });
    await expectJson(await (await person()).send("POST", `/notes/${note.id}/shares`, body), 404, {
      error: NoteMessage.notFound,
    });
    expect(await rows("note_shares", "note_id = ?", note.id)).toHaveLength(1);
  });

  it(`allows ${MAX_SHARES_PER_NOTE} shares per note, then 409`, async () => {
    const owner = await person();
    const note = await noteOf(owner);
    await seedShares(note.id, MAX_SHARES_PER_NOTE - 1);
    await shared(owner, note.id, randomEmail());
    await expectJson(
      await owner.send("POST", `/notes/${note.id}/shares`, { email: randomEmail(), role: "viewer" }),
      409,
      {
        error: SharingMessage.tooManyShares,
      },
    );
  });

  it(`makes exactly ${MAX_SHARES_PER_NOTE} shares of a burst of 30 on a note that has 80`, async () => {
    const owner = await person();
    const note = await noteOf(owner);
    await seedShares(note.id, 80);
    const emails = Array.from({ length: 30 }, () => randomEmail());
    // Addresses mailed earlier today: the burst meets the note's limit, not the owner's new addresses of the day.
    await seedAddresses(owner, emails);
    const answers = await Promise.all(
      emails.map((email) =>
        send("POST", `/notes/${note.id}/shares`, { token: owner.token, body: { email, role: "viewer" }, env: QUIET }),
      ),
    );
    expect(tally(answers)).toEqual({ 201: 20, 409: 10 });
    expect(await rows("note_shares", "note_id = ?", note.id)).toHaveLength(MAX_SHARES_PER_NOTE);
  });
});

describe(`at most ${NEW_SHARE_ADDRESSES_PER_DAY} new addresses an owner makes the service mail in a day`, () => {
  it("refuses the next new address with 429 and Retry-After; an address mailed today and one a day old pass", async () => {
    const owner = await person();
    const [first, second] = [await noteOf(owner), await noteOf(owner)];
    const old = randomEmail();
    const earlier = Array.from({ length: NEW_SHARE_ADDRESSES_PER_DAY - 1 }, () => randomEmail());
    await seedAddresses(owner, earlier.slice(1), HOUR);
    await seedAddresses(owner, [earlier[0]!], 2 * HOUR);
    await seedAddresses(owner, [old], SHARE_ADDRESS_WINDOW_MS + MINUTE);
    await shared(owner, first.id, randomEmail());
    const refused = await owner.send("POST", `/notes/${first.id}/shares`, { email: randomEmail(), role: "viewer" });
    // The oldest address of the day leaves the window first, 22 hours from now.
    expect(Number(refused.headers.get("retry-after"))).toBe((SHARE_ADDRESS_WINDOW_MS - 2 * HOUR) / 1000);
    await expectJson(refused, 429, { error: SharingMessage.tooManyAddresses });
    // Not new: mailed within the day (another note), or mailed more than a day ago... which makes it new again.
    await shared(owner, second.id, earlier[5]!);
    await expectJson(await owner.send("POST", `/notes/${second.id}/shares`, { email: old, role: "viewer" }), 429, {
      error: SharingMessage.tooManyAddresses,
    });
  });

  it(`lets ${NEW_SHARE_ADDRESSES_PER_DAY} of 60 new addresses sent together through, over several notes`, async () => {
    const owner = await person();
    const notes = [await noteOf(owner), await noteOf(owner), await noteOf(owner)];
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        send("POST", `/notes/${notes[i % 3]!.id}/shares`, {
          token: owner.token,
          body: { email: randomEmail(), role: "viewer" },
          env: QUIET,
        }),
      ),
    );
    expect(tally(answers)).toEqual({ 201: NEW_SHARE_ADDRESSES_PER_DAY, 429: 60 - NEW_SHARE_ADDRESSES_PER_DAY });
    expect(await rows("share_mail_addresses", "owner_id = ?", owner.userId)).toHaveLength(NEW_SHARE_ADDRESSES_PER_DAY);
  });
});

describe("the sharing mail's budgets", () => {
  /** Shares `note` with `email` from a client of its own, under `overrides`: 201 whatever the budgets say. */
  async function shareFrom(owner: Person, noteId: number, email: string, overrides: Record<string, string>) {
    const response = await send("POST", `/notes/${noteId}/shares`, {
      token: owner.token,
      body: { email, role: "viewer" },
      headers: anotherClient(),
      env: overrides,
    });
    expect(response.status).toBe(201);
  }

  it("counts in the requesting client's allowance of mail to unproven addresses: the share is made, the mail beyond is not sent", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const logs = captureLogs();
    const client = anotherClient();
    const addresses = [randomEmail(), randomEmail(), randomEmail()];
    for (const email of addresses) {
      const response = await send("POST", `/notes/${note.id}/shares`, {
        token: owner.token,
        body: { email, role: "viewer" },
        headers: client,
        env: { MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT: "2" },
      });
      expect(response.status).toBe(201);
    }
    const mailed = await Promise.all(addresses.map(async (email) => (await mailsTo(email)).length));
    expect(mailed).toEqual([1, 1, 0]);
    expect(logs.find((line) => line.event === "mail_budget_exhausted")).toMatchObject({
      kind: "note_shared",
      audience: "unverified",
      budget: "unverified_client",
    });
    // Another owner, from another client, has an allowance of its own.
    const other = await person();
    const email = randomEmail();
    await shareFrom(other, (await noteOf(other)).id, email, { MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT: "2" });
    expect(await mailsTo(email)).toHaveLength(1);
  });

  it("counts in the owner's share of the deployment's budget, however many networks the owner shares from", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    await env.DB.prepare("DELETE FROM deployment_windows").run();
    const logs = captureLogs();
    // MAIL_HOURLY_LIMIT 8: one account's share is 2 an hour.
    const addresses = [randomEmail(), randomEmail(), randomEmail()];
    for (const email of addresses) await shareFrom(owner, note.id, email, { MAIL_HOURLY_LIMIT: "8" });
    const mailed = await Promise.all(addresses.map(async (email) => (await mailsTo(email)).length));
    expect(mailed).toEqual([1, 1, 0]);
    expect(logs.find((line) => line.event === "mail_budget_exhausted")).toMatchObject({
      kind: "note_shared",
      budget: "account_hourly",
    });
  });

  it("counts against the deployment's budget", async () => {
    const [owner, other] = [await person(), await person()];
    const [note, otherNote] = [await noteOf(owner), await noteOf(other)];
    await env.DB.prepare("DELETE FROM deployment_windows").run();
    const logs = captureLogs();
    const [first, second] = [randomEmail(), randomEmail()];
    // MAIL_HOURLY_LIMIT 2: mail to unproven addresses may take half of it, one.
    await shareFrom(owner, note.id, first, { MAIL_HOURLY_LIMIT: "2" });
    await shareFrom(other, otherNote.id, second, { MAIL_HOURLY_LIMIT: "2" });
    expect([(await mailsTo(first)).length, (await mailsTo(second)).length]).toEqual([1, 0]);
    expect(logs.find((line) => line.event === "mail_budget_exhausted")).toMatchObject({
      kind: "note_shared",
      budget: "unverified_hourly",
      limit: 1,
    });
    expect(
      await env.DB.prepare("SELECT count FROM deployment_windows WHERE name = 'mails_hourly'").first("count"),
    ).toBe(1);
  });
});

describe("a share to an address nobody has verified", () => {
  it("takes effect when an account verifies that address, and never for an account that only registered it", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const email = randomEmail();
    await shared(owner, note.id, email, "editor");
    expect((await quietRegister(email)).status).toBe(201);
    expect((await rows("note_shares", "note_id = ?", note.id))[0]!.grantee_id).toBeNull();
    expect((await call("POST", "/auth/verify-email", { email, token: (await storedCode(email))!.code })).status).toBe(
      200,
    );
    expect((await rows("note_shares", "note_id = ?", note.id))[0]!.grantee_id).toBe((await person(email)).userId);
    const { token } = await logIn(email);
    const read = await send("GET", `/notes/${note.id}`, { token });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(note);
  });
});

describe("GET /notes/{id}/shares", () => {
  it("lists every share to the owner, oldest first, and to a grantee only its own", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const pending = await shared(owner, note.id, randomEmail(), "editor");
    const own = await shared(owner, note.id, grantee.email);
    const listed = await owner.send("GET", `/notes/${note.id}/shares`);
    expect(listed.status).toBe(200);
    expect(v.parse(Shares, await listed.json())).toEqual([pending, own]);
    await expectJson(await grantee.send("GET", `/notes/${note.id}/shares`), 200, [own]);
    await expectJson(await (await person()).send("GET", `/notes/${note.id}/shares`), 404, {
      error: NoteMessage.notFound,
    });
  });
});

describe("PATCH /notes/{id}/shares/{shareId}", () => {
  it("changes the role (owner only): 200 with the share; a grantee gets 403, a stranger 404", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const share = await shared(owner, note.id, grantee.email);
    const path = `/notes/${note.id}/shares/${share.id}`;
    await expectJson(await owner.send("PATCH", path, { role: "editor" }), 200, { ...share, role: "editor" });
    expect((await grantee.send("PATCH", `/notes/${note.id}`, { title: "Editing now" })).status).toBe(200);
    await expectJson(await grantee.send("PATCH", path, { role: "viewer" }), 403, {
      error: SharingMessage.ownerOnlyRole,
    });
    await expectJson(await (await person()).send("PATCH", path, { role: "viewer" }), 404, {
      error: NoteMessage.notFound,
    });
    await expectJson(await owner.send("PATCH", `/notes/${note.id}/shares/nope`, { role: "viewer" }), 404, {
      error: SharingMessage.shareNotFound,
    });
    await expectJson(await owner.send("PATCH", path, { role: "owner" }), 400, { error: SharingMessage.invalidRole });
    expect((await rows("note_shares", "id = ?", share.id))[0]!.role).toBe("editor");
  });
});

describe("DELETE /notes/{id}/shares/{shareId}", () => {
  it("ends a share by its owner (revoking) and by its grantee (leaving); not another grantee's", async () => {
    const owner = await person();
    const [first, second] = [await person(), await person()];
    const note = await noteOf(owner);
    const ofFirst = await shared(owner, note.id, first.email);
    const ofSecond = await shared(owner, note.id, second.email);
    await expectJson(await first.send("DELETE", `/notes/${note.id}/shares/${ofSecond.id}`), 404, {
      error: SharingMessage.shareNotFound,
    });
    const left = await first.send("DELETE", `/notes/${note.id}/shares/${ofFirst.id}`);
    expect(left.status).toBe(204);
    expect(await left.text()).toBe("");
    expect((await owner.send("DELETE", `/notes/${note.id}/shares/${ofSecond.id}`)).status).toBe(204);
    expect(await rows("note_shares", "note_id = ?", note.id)).toEqual([]);
    await expectJson(await owner.send("DELETE", `/notes/${note.id}/shares/${ofSecond.id}`), 404, {
      error: SharingMessage.shareNotFound,
    });
    await expectJson(await first.send("DELETE", `/notes/${note.id}/shares/${ofFirst.id}`), 404, {
      error: NoteMessage.notFound,
    });
  });
});
