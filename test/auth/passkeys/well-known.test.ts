import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { call, callWithEnv, JSON_TYPE, jsonOf, textOf, TEXT } from "../../support/app";
import { b64url, SoftwarePasskey } from "./authenticator";
import { registerWith, signedInAccount, signIn, type Overrides } from "./support";

/**
 * What native apps need (src/auth/passkeys/well-known.ts), and the settings behind them and the relying
 * party (src/config/passkeys.ts): WEBAUTHN_RP_ID, WEBAUTHN_ORIGINS and its defaults, ANDROID_APP_FINGERPRINTS,
 * APPLE_APP_IDS.
 */

const FINGERPRINT = Array.from({ length: 32 }, (_, i) => (i * 7).toString(16).padStart(2, "0").toUpperCase()).join(":");
const OTHER_FINGERPRINT = Array.from({ length: 32 }, () => "AB").join(":");

describe("GET /.well-known/assetlinks.json", () => {
  it("answers 404 JSON while ANDROID_APP_FINGERPRINTS is empty", async () => {
    expect(await jsonOf(await call("GET", "/.well-known/assetlinks.json"))).toEqual({
      status: 404,
      type: JSON_TYPE,
      body: { error: "Not found" },
    });
  });

  it("states that each app of ANDROID_APP_FINGERPRINTS may use this domain's sign-in credentials, and nothing more: no handling of its links (I4); fingerprints grouped by package", async () => {
    const setting = `com.example.notes:${FINGERPRINT.toLowerCase()}, com.example.notes:${OTHER_FINGERPRINT},org.example.other:${FINGERPRINT}`;
    const response = await callWithEnv({ ANDROID_APP_FINGERPRINTS: setting }, "GET", "/.well-known/assetlinks.json");
    expect(response.headers.get("cache-control")).toBe("public, max-age=3600");
    // Never handle_all_urls: that would make the app the verified handler of every link of the domain, the reset and
    // undo links of the mails included. Passkeys need only get_login_creds.
    const relation = ["delegate_permission/common.get_login_creds"];
    expect(await jsonOf(response)).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: [
        {
          relation,
          target: {
            namespace: "android_app",
            package_name: "com.example.notes",
            sha256_cert_fingerprints: [FINGERPRINT, OTHER_FINGERPRINT],
          },
        },
        {
          relation,
          target: {
            namespace: "android_app",
            package_name: "org.example.other",
            sha256_cert_fingerprints: [FINGERPRINT],
          },
        },
      ],
    });
  });

  it("answers 503 naming the problem for a malformed setting, and the rest of the API goes on", async () => {
    const bindings = { ANDROID_APP_FINGERPRINTS: "com.example.notes:AB:CD" };
    const { status, body } = await jsonOf(await callWithEnv(bindings, "GET", "/.well-known/assetlinks.json"));
    expect(status).toBe(503);
    expect(body).toEqual({
      error: expect.stringContaining(
        'ANDROID_APP_FINGERPRINTS: "com.example.notes:AB:CD" is not package:SHA256_FINGERPRINT',
      ),
    });
    expect((await callWithEnv(bindings, "GET", "/notes")).status).toBe(200);
  });
});

describe("GET /.well-known/apple-app-site-association", () => {
  it("answers 404 JSON while APPLE_APP_IDS is empty", async () => {
    expect(await jsonOf(await call("GET", "/.well-known/apple-app-site-association"))).toEqual({
      status: 404,
      type: JSON_TYPE,
      body: { error: "Not found" },
    });
  });

  it("lists the apps of APPLE_APP_IDS under webcredentials", async () => {
    const response = await callWithEnv(
      { APPLE_APP_IDS: "ABCDE12345.com.example.notes, ABCDE12345.com.example.notes.beta" },
      "GET",
      "/.well-known/apple-app-site-association",
    );
    expect(await jsonOf(response)).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { webcredentials: { apps: ["ABCDE12345.com.example.notes", "ABCDE12345.com.example.notes.beta"] } },
    });
  });

  it("answers 503 naming the problem for an id that is not TEAMID.bundle.id", async () => {
    const { status, body } = await jsonOf(
      await callWithEnv({ APPLE_APP_IDS: "com.example.notes" }, "GET", "/.well-known/apple-app-site-association"),
    );
    expect({ status, body }).toEqual({
      status: 503,
      body: { error: expect.stringContaining('APPLE_APP_IDS: "com.example.notes" is not TEAMID.bundle.id') },
    });
  });
});

describe("the relying party's settings", () => {
  const example = { WEBAUTHN_RP_ID: "example.com" } satisfies Overrides;

  it("accepts https://<WEBAUTHN_RP_ID> by default and refuses the development origin", async () => {
    const { session } = await signedInAccount();
    const refused = await registerWith(session.token, await SoftwarePasskey.create(), { bindings: example });
    expect(await jsonOf(refused)).toMatchObject({ status: 400, body: { reason: "origin" } });
    const passkey = await SoftwarePasskey.create();
    expect(
      (await registerWith(session.token, passkey, { bindings: example, overrides: { origin: "https://example.com" } }))
        .status,
    ).toBe(201);
    expect((await signIn(passkey, { origin: "https://example.com" }, example)).status).toBe(200);
  });

  it("accepts an Android app's origin (android:apk-key-hash of its certificate) by default once ANDROID_APP_FINGERPRINTS names it", async () => {
    const bytes = Uint8Array.from(FINGERPRINT.split(":"), (pair) => Number.parseInt(pair, 16));
    const origin = `android:apk-key-hash:${b64url(bytes)}`;
    const withApp = { ...example, ANDROID_APP_FINGERPRINTS: `com.example.notes:${FINGERPRINT}` };
    const { session } = await signedInAccount();
    const passkey = await SoftwarePasskey.create({ counting: false });
    expect((await registerWith(session.token, passkey, { bindings: withApp, overrides: { origin } })).status).toBe(201);
    expect((await signIn(passkey, { origin }, withApp)).status).toBe(200);
    expect(await textOf(await signIn(passkey, { origin }, example))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidPasskey,
    });
  });

  it("takes WEBAUTHN_ORIGINS as the exact list when set, and WEBAUTHN_RP_NAME (or MAIL_FROM_NAME) as the name shown", async () => {
    const bindings = {
      ...example,
      WEBAUTHN_ORIGINS: "https://app.example.com, https://example.com:8443",
      WEBAUTHN_RP_NAME: "Notes",
    };
    const { session } = await signedInAccount();
    const options = await callWithEnv(
      bindings,
      "POST",
      "/auth/passkeys/register/options",
      { password: "correct horse battery" },
      { Authorization: `Bearer ${session.token}` },
    );
    expect(await options.json()).toMatchObject({ options: { rp: { id: "example.com", name: "Notes" } } });
    const passkey = await SoftwarePasskey.create();
    expect(
      (await registerWith(session.token, passkey, { bindings, overrides: { origin: "https://example.com" } })).status,
    ).toBe(400);
    expect(
      (await registerWith(session.token, passkey, { bindings, overrides: { origin: "https://example.com:8443" } }))
        .status,
    ).toBe(201);
    expect((await signIn(passkey, { origin: "https://app.example.com" }, bindings)).status).toBe(200);
  });

  it("refuses, with a 503 on the ceremonies, origins that are not the RP ID's, plain http beyond localhost, and an RP ID that is an address", async () => {
    for (const bindings of [
      { ...example, WEBAUTHN_ORIGINS: "https://example.org" },
      { ...example, WEBAUTHN_ORIGINS: "http://example.com" },
      { ...example, WEBAUTHN_ORIGINS: "https://example.com/path" },
      { WEBAUTHN_RP_ID: "127.0.0.1" },
      { WEBAUTHN_RP_ID: "Example.com" },
    ]) {
      expect(await textOf(await callWithEnv(bindings, "POST", "/auth/passkeys/login/options", {}))).toEqual({
        status: 503,
        type: TEXT,
        body: AuthMessage.passkeysUnavailable,
      });
    }
  });
});
