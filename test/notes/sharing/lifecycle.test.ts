import { env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { NoteMessage } from "../../../src/notes/messages";
import { SharingMessage } from "../../../src/notes/sharing/messages";
import { SHARE_ADDRESS_WINDOW_MS } from "../../../src/notes/sharing/policy";
import { MINUTE } from "../../../src/lib/units";
import { quietRegister, storedCode } from "../../support/accounts";
import { call, fireCron, randomEmail } from "../../support/app";
import { Note } from "../../support/notes";
import { admin } from "../../support/admin";
import {
  deleteAccount,
  expectJson,
  linked,
  noteOf,
  openLink,
  person,
  rows,
  shared,
  Shares,
  type Person,
} from "./support";

/** Accounts' deletions and the cron (item 10 of issue 45): what goes with an owner, with a grantee, and with time. */

const Page = v.object({
  changes: v.array(
    v.variant("type", [
      v.object({ type: v.literal("upsert"), note: Note, etag: v.string() }),
      v.object({ type: v.literal("delete"), id: v.number() }),
    ]),
  ),
  cursor: v.string(),
  has_more: v.boolean(),
});

/** An account deleted by the operator: the admin API deletes what the account's own deletion does. */
async function deleteByAdmin(who: Person): Promise<void> {
  expect((await admin("DELETE", `/admin/users/${who.userId}`)).status).toBe(204);
}

/** Both ways an account is deleted: by its owner (DELETE /auth/account) and by an operator (DELETE /admin/users/{id}). */
const DELETIONS = [
  ["by itself", deleteAccount],
  ["through the admin API", deleteByAdmin],
] as const;

describe.each(DELETIONS)("deleting the owner's account %s", (_, remove) => {
  it("deletes its notes with their links and shares: the grantee's next request is a 404, its feed gets the tombstone", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const link = await linked(owner, note.id);
    await shared(owner, note.id, grantee.email, "editor");
    await shared(owner, note.id, randomEmail());
    const before = v.parse(Page, await (await grantee.send("GET", "/changes")).json());
    expect(before.changes).toEqual([{ type: "upsert", note, etag: expect.any(String) }]);

    await remove(owner);
    await expectJson(await grantee.send("GET", `/notes/${note.id}`), 404, { error: NoteMessage.notFound });
    await expectJson(await grantee.send("GET", "/notes?shared=true"), 200, []);
    await expectJson(await openLink(link.token), 404, { error: SharingMessage.sharedNotFound });
    const after = v.parse(Page, await (await grantee.send("GET", `/changes?cursor=${before.cursor}`)).json());
    expect(after.changes).toEqual([{ type: "delete", id: note.id }]);
    expect(await rows("notes", "id = ?", note.id)).toEqual([]);
    expect(await rows("note_links", "note_id = ?", note.id)).toEqual([]);
    expect(await rows("note_shares", "note_id = ?", note.id)).toEqual([]);
    expect(await rows("share_mail_addresses", "owner_id = ?", owner.userId)).toEqual([]);
  });
});

describe.each(DELETIONS)("deleting the grantee's account %s", (_, remove) => {
  it("deletes the shares it received and its feed; the note stays its owner's, and the address's next account gets nothing", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const share = await shared(owner, note.id, grantee.email, "editor");
    const kept = await shared(owner, note.id, randomEmail());
    expect(await rows("shared_changes", "reader = ?", grantee.userId)).toHaveLength(1);

    await remove(grantee);
    expect(v.parse(Shares, await (await owner.send("GET", `/notes/${note.id}/shares`)).json())).toEqual([kept]);
    expect(await rows("note_shares", "id = ?", share.id)).toEqual([]);
    expect(await rows("shared_changes", "reader = ?", grantee.userId)).toEqual([]);
    expect(await rows("note_clocks", "owner = ?", grantee.userId)).toEqual([]);
    await expectJson(await owner.send("GET", `/notes/${note.id}`), 200, note);

    // Whoever verifies the address next starts with nothing of it.
    expect((await quietRegister(grantee.email)).status).toBe(201);
    const token = (await storedCode(grantee.email))!.code;
    expect((await call("POST", "/auth/verify-email", { email: grantee.email, token })).status).toBe(200);
    const next = await person(grantee.email);
    await expectJson(await next.send("GET", `/notes/${note.id}`), 404, { error: NoteMessage.notFound });
    await expectJson(await next.send("GET", "/notes?shared=true"), 200, []);
    expect(v.parse(Page, await (await next.send("GET", "/changes")).json()).changes).toEqual([]);
  });
});

describe("the cron", () => {
  it("forgets the addresses an owner mailed more than a day ago, and keeps the day's", async () => {
    const owner = await person();
    const note = await noteOf(owner);
    const [old, recent] = [randomEmail(), randomEmail()];
    await shared(owner, note.id, old);
    await shared(owner, note.id, recent);
    await env.DB.prepare("UPDATE share_mail_addresses SET mailed_at = ? WHERE owner_id = ? AND email = ?")
      .bind(Date.now() - SHARE_ADDRESS_WINDOW_MS - MINUTE, owner.userId, old)
      .run();
    await fireCron();
    expect((await rows("share_mail_addresses", "owner_id = ?", owner.userId)).map((row) => row.email)).toEqual([
      recent,
    ]);
  });
});
