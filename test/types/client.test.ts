/**
 * What the typed client (`hc<AppType>`) infers for the answers apps rely on. Checked by the compiler
 * (`npm run check` type-checks test/), not at run time: a helper typed `: Response` erases these types,
 * and this file then stops compiling. No cast anywhere: a cast would hide exactly that.
 */
import { exports } from "cloudflare:workers";
import { hc } from "hono/client";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { AppType } from "../../src/index";
import { AuthMessage } from "../../src/auth/messages";
import type { PasskeyJson, PasskeyRefusalJson, RequestOptionsJson } from "../../src/auth/shapes";
import type { LiveMessage } from "../../src/live/messages";
import type { LiveTicketJson } from "../../src/live/requests";
import type { AttachmentMessage } from "../../src/notes/attachments/messages";
import type { AttachmentJson } from "../../src/notes/attachments/shapes";
import type { ChangesPage } from "../../src/notes/changes";
import type { NoteMessage } from "../../src/notes/messages";
import type { NoteJson } from "../../src/notes/requests";
import type { SharingMessage } from "../../src/notes/sharing/messages";
import type { LinkJson, NewLinkJson, SharedNoteJson, ShareJson } from "../../src/notes/sharing/shapes";

const api = hc<AppType>("http://api.test", {
  fetch: (input: RequestInfo | URL, init?: RequestInit) => exports.default.fetch(new Request(input, init)),
});
type Login = Awaited<ReturnType<typeof api.auth.login.$post>>;
type Me = Awaited<ReturnType<typeof api.auth.me.$get>>;
type Verify = Awaited<ReturnType<typeof api.auth.mfa.verify.$post>>;
type CreateNote = Awaited<ReturnType<typeof api.notes.$post>>;
type ReadNote = Awaited<ReturnType<(typeof api.notes)[":id"]["$get"]>>;
type Changes = Awaited<ReturnType<typeof api.changes.$get>>;
type OAuthToken = Awaited<ReturnType<typeof api.auth.oauth.token.$post>>;
type IdToken = Awaited<ReturnType<(typeof api.auth.oauth)[":provider"]["id-token"]["$post"]>>;
type UpdateNote = Awaited<ReturnType<(typeof api.notes)[":id"]["$patch"]>>;
type PasskeySignIn = Awaited<ReturnType<typeof api.auth.passkeys.login.verify.$post>>;
type PasskeySignInOptions = Awaited<ReturnType<typeof api.auth.passkeys.login.options.$post>>;
type PasskeyRegister = Awaited<ReturnType<typeof api.auth.passkeys.register.verify.$post>>;
type Passkeys = Awaited<ReturnType<typeof api.auth.passkeys.$get>>;
type LiveTicket = Awaited<ReturnType<(typeof api.changes)["live-ticket"]["$post"]>>;
type Attachments = (typeof api.notes)[":id"]["attachments"];
type Upload = Awaited<ReturnType<Attachments["$post"]>>;
type ListAttachments = Awaited<ReturnType<Attachments["$get"]>>;
type Links = (typeof api.notes)[":id"]["links"];
type MakeLink = Awaited<ReturnType<Links["$post"]>>;
type ListLinks = Awaited<ReturnType<Links["$get"]>>;
type RevokeLink = Awaited<ReturnType<Links[":linkId"]["$delete"]>>;
type OpenLink = Awaited<ReturnType<(typeof api.shared)[":token"]["$get"]>>;
type Shares = (typeof api.notes)[":id"]["shares"];
type MakeShare = Awaited<ReturnType<Shares["$post"]>>;
type ListShares = Awaited<ReturnType<Shares["$get"]>>;
type ChangeRole = Awaited<ReturnType<Shares[":shareId"]["$patch"]>>;
type EndShare = Awaited<ReturnType<Shares[":shareId"]["$delete"]>>;
type ListNotes = typeof api.notes.$get;

/** The JSON body of the answers of `R` with status `S`. */
type BodyOf<R, S extends number> = R extends { status: S; json(): Promise<infer B> } ? B : never;

describe("typed client", () => {
  it("types a login's tokens, and its second-factor branch, told apart by narrowing", () => {
    type Answer = BodyOf<Login, 200>;
    expectTypeOf<Exclude<Answer, { mfa_required: true }>>().toMatchObjectType<{
      token: string;
      refresh_token: string;
      expires_in: number;
    }>();
    expectTypeOf<Extract<Answer, { mfa_required: true }>>().toEqualTypeOf<{
      mfa_required: true;
      mfa_token: string;
      expires_in: number;
    }>();
    expectTypeOf<BodyOf<Verify, 200>>().toMatchObjectType<{
      token: string;
      refresh_token: string;
      expires_in: number;
      device_token: string;
    }>();
  });

  it("types a passkey sign-in as a login, a new passkey, its refusal and the list", () => {
    expectTypeOf<BodyOf<PasskeySignIn, 200>>().toMatchObjectType<{
      token: string;
      refresh_token: string;
      expires_in: number;
      device_token: string;
    }>();
    expectTypeOf<BodyOf<PasskeySignInOptions, 200>>().toEqualTypeOf<{ options: RequestOptionsJson }>();
    expectTypeOf<BodyOf<PasskeyRegister, 201>>().toEqualTypeOf<PasskeyJson>();
    expectTypeOf<BodyOf<PasskeyRegister, 400>>().toEqualTypeOf<PasskeyRefusalJson>();
    expectTypeOf<BodyOf<Passkeys, 200>>().toEqualTypeOf<PasskeyJson[]>();
  });

  it("types /auth/me", () => {
    expectTypeOf<BodyOf<Me, 200>>().toMatchObjectType<{
      id: number;
      email: string;
      verified: boolean;
      created_at: string;
      mfa: { totp: boolean; recovery_codes_remaining: number };
      identities: { provider: string; email: string | null; created_at: string }[];
      has_password: boolean;
    }>();
  });

  it("types a social sign-in like a login, and the native flow's refusals", () => {
    expectTypeOf<BodyOf<OAuthToken, 200>>().toEqualTypeOf<BodyOf<Login, 200>>();
    expectTypeOf<BodyOf<IdToken, 200>>().toEqualTypeOf<BodyOf<Login, 200>>();
    expectTypeOf<BodyOf<IdToken, 403>>().toEqualTypeOf<{
      error: "email_not_verified" | "account_conflict";
      error_description: string;
    }>();
  });

  it("types a created and a read note as the note JSON", () => {
    expectTypeOf<BodyOf<CreateNote, 201>>().toEqualTypeOf<NoteJson>();
    expectTypeOf<BodyOf<ReadNote, 200>>().toEqualTypeOf<NoteJson>();
  });

  it("types a page of the changes feed, its changes told apart by type, and its 410", () => {
    expectTypeOf<BodyOf<Changes, 200>>().toEqualTypeOf<ChangesPage>();
    expectTypeOf<Extract<ChangesPage["changes"][number], { type: "upsert" }>["note"]>().toEqualTypeOf<NoteJson>();
    expectTypeOf<BodyOf<Changes, 410>>().toEqualTypeOf<{ error: typeof NoteMessage.cursorExpired }>();
  });

  it("types a live-updates ticket, its 429, and the socket's URL with its ticket", () => {
    expectTypeOf<BodyOf<LiveTicket, 201>>().toEqualTypeOf<LiveTicketJson>();
    expectTypeOf<BodyOf<LiveTicket, 429>>().toEqualTypeOf<{ error: typeof LiveMessage.tooManySockets }>();
    expect(api.changes.live.$url({ query: { ticket: "t" } }).href).toBe("http://api.test/changes/live?ticket=t");
  });

  it("types an upload as the attachment, its refusals, and the list; calls them with the file's bytes", async () => {
    expectTypeOf<BodyOf<Upload, 201>>().toEqualTypeOf<AttachmentJson>();
    expectTypeOf<BodyOf<Upload, 409>>().toEqualTypeOf<{ error: typeof AttachmentMessage.tooMany }>();
    expectTypeOf<BodyOf<Upload, 411>>().toEqualTypeOf<{ error: typeof AttachmentMessage.lengthRequired }>();
    expectTypeOf<BodyOf<Upload, 413>>().toEqualTypeOf<
      { error: typeof AttachmentMessage.tooLarge } | { error: typeof AttachmentMessage.quotaFull }
    >();
    expectTypeOf<BodyOf<ListAttachments, 200>>().toEqualTypeOf<AttachmentJson[]>();
    // With public notes (the suite's own), the calls go through and answer that attachments need accounts.
    const bytes = new TextEncoder().encode("hello");
    const uploaded = await api.notes[":id"].attachments.$post(
      { param: { id: "1" }, query: { filename: "hello.txt" } },
      { init: { body: bytes, headers: { "Content-Length": String(bytes.byteLength) } } },
    );
    expect(uploaded.status).toBe(404);
    expect(api.notes[":id"].attachments[":attachmentId"].$url({ param: { id: "1", attachmentId: "a" } }).href).toBe(
      "http://api.test/notes/1/attachments/a",
    );
    const linked = await api.attachments[":attachmentId"].$get({ param: { attachmentId: "a" } });
    expect(linked.status).toBe(404);
  });

  it("types every sharing route: links, the public link's note, shares and their refusals", async () => {
    expectTypeOf<BodyOf<MakeLink, 201>>().toEqualTypeOf<NewLinkJson>();
    expectTypeOf<BodyOf<MakeLink, 409>>().toEqualTypeOf<{ error: typeof SharingMessage.tooManyLinks }>();
    expectTypeOf<BodyOf<MakeLink, 403>>().toExtend<{ error: string }>();
    expectTypeOf<BodyOf<ListLinks, 200>>().toEqualTypeOf<LinkJson[]>();
    expectTypeOf<RevokeLink["status"]>().toExtend<number>();
    expectTypeOf<Extract<RevokeLink, { status: 204 }>>().not.toBeNever();
    expectTypeOf<BodyOf<OpenLink, 200>>().toEqualTypeOf<SharedNoteJson>();
    expectTypeOf<BodyOf<OpenLink, 404>>().toExtend<{ error: string }>();
    expectTypeOf<BodyOf<MakeShare, 201>>().toEqualTypeOf<ShareJson>();
    expectTypeOf<{ error: typeof SharingMessage.shareWithSelf }>().toExtend<BodyOf<MakeShare, 400>>();
    expectTypeOf<{ error: typeof SharingMessage.tooManyAddresses }>().toExtend<BodyOf<MakeShare, 429>>();
    expectTypeOf<BodyOf<ListShares, 200>>().toEqualTypeOf<ShareJson[]>();
    expectTypeOf<BodyOf<ChangeRole, 200>>().toEqualTypeOf<ShareJson>();
    expectTypeOf<Extract<EndShare, { status: 204 }>>().not.toBeNever();
    // With public notes (the suite's own), the calls go through and answer that sharing needs accounts.
    const share = await api.notes[":id"].shares.$post({
      param: { id: "1" },
      json: { email: "grace@example.com", role: "viewer" },
    });
    expect(share.status).toBe(404);
    const link = await api.notes[":id"].links.$post({ param: { id: "1" } });
    expect(link.status).toBe(404);
    const opened = await api.shared[":token"].$get({ param: { token: "A".repeat(43) } });
    expect(opened.status).toBe(404);
    // GET /notes?shared=true: the notes shared with the caller, typed as the list is.
    expectTypeOf<NonNullable<Parameters<ListNotes>[0]>["query"]["shared"]>().toEqualTypeOf<
      "true" | "false" | undefined
    >();
    expectTypeOf<BodyOf<Awaited<ReturnType<ListNotes>>, 200>>().toEqualTypeOf<NoteJson[]>();
  });

  it("types a conditional update's 412", () => {
    expectTypeOf<BodyOf<UpdateNote, 412>>().toEqualTypeOf<{ error: typeof NoteMessage.preconditionFailed }>();
  });

  it("types a missing note as { error: string }, down to the contract's message", () => {
    expectTypeOf<BodyOf<ReadNote, 404>>().not.toBeNever();
    expectTypeOf<BodyOf<ReadNote, 404>>().toExtend<{ error: string }>();
    expectTypeOf<BodyOf<ReadNote, 404>>().toEqualTypeOf<{ error: typeof NoteMessage.notFound }>();
  });

  it("tells the answers apart by status", async () => {
    const login = await api.auth.login.$post({
      json: { email: `nobody-${crypto.randomUUID()}@example.com`, password: "correct horse battery" },
    });
    if (login.status === 200) {
      const body = await login.json();
      if (!("mfa_required" in body)) expectTypeOf(body).toHaveProperty("refresh_token");
    }
    expect(login.status).toBe(401);
    if (login.status === 401) {
      const text = await login.text();
      expectTypeOf(text).toEqualTypeOf<typeof AuthMessage.invalidCredentials>();
      expect(text).toBe(AuthMessage.invalidCredentials);
    }
  });
});
