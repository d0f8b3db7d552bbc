import { Hono } from "hono";
import type { AndroidApp, Unavailable } from "../../config";
import { describeRoute, json, jsonError } from "../../lib/describe";
import { errorResponse } from "../../lib/http";
import { SECOND } from "../../lib/units";
import type { AppEnv } from "../../types";
import { WELL_KNOWN_MAX_AGE_MS } from "../policy";

/**
 * The documents that let native apps use this domain's passkeys, built from configuration: Digital Asset
 * Links for Android (ANDROID_APP_FINGERPRINTS) and the apple-app-site-association file for iOS
 * (APPLE_APP_IDS). Each is a 404 while its setting is empty, and a 503 naming the problem while it is
 * malformed. Both platforms fetch them from https://<WEBAUTHN_RP_ID>/.well-known/, so the API must be
 * served on the RP ID itself for native apps (docs/passkeys.md).
 */

const NOT_CONFIGURED = "Not found";
const cached = { "Cache-Control": `public, max-age=${WELL_KNOWN_MAX_AGE_MS / SECOND}` };

/**
 * What Android's Credential Manager checks: each app may use this site's sign-in credentials (its passkeys), and
 * nothing more. Never `handle_all_urls`: it would make the app the verified handler of every link of the domain, the
 * reset and undo links of the mails included, which passkeys do not need.
 */
function assetLinks(apps: AndroidApp[]) {
  return apps.map(({ packageName, fingerprints }) => ({
    relation: ["delegate_permission/common.get_login_creds"],
    target: { namespace: "android_app", package_name: packageName, sha256_cert_fingerprints: fingerprints },
  }));
}

/** What iOS checks for an app's associated domain `webcredentials:<domain>`. */
function appleAppSiteAssociation(appIds: string[]) {
  return { webcredentials: { apps: appIds } };
}

const unconfigured = (what: string) => ({
  "404": jsonError(`${what} is empty: no app is associated`, NOT_CONFIGURED),
  "503": jsonError(`${what} is malformed (the message names the problem)`, `${what}: "…" is not …`),
});
const wellKnownTag = ["native apps"];

function unusable(setting: string[] | AndroidApp[] | Unavailable): setting is Unavailable {
  return "problem" in setting;
}

export const wellKnown = new Hono<AppEnv>()
  .get(
    "/assetlinks.json",
    describeRoute({
      tags: wellKnownTag,
      summary: "Digital Asset Links (Android apps)",
      description:
        "The Android apps of ANDROID_APP_FINGERPRINTS may use this domain's passkeys (`get_login_creds` only: no app handles the domain's " +
        "links, the mails' reset and undo links included). Served at the RP ID's origin.",
      responses: {
        "200": json("The statements", { type: "array", items: { type: "object" } }),
        ...unconfigured("ANDROID_APP_FINGERPRINTS"),
      },
    }),
    (c) => {
      const apps = c.var.config.androidApps;
      if (unusable(apps)) return c.json({ error: apps.problem }, 503);
      if (apps.length === 0) return errorResponse(c, 404, NOT_CONFIGURED);
      return c.json(assetLinks(apps), 200, cached);
    },
  )
  .get(
    "/apple-app-site-association",
    describeRoute({
      tags: wellKnownTag,
      summary: "Associated domains (iOS apps)",
      description:
        "The iOS apps of APPLE_APP_IDS may use this domain's passkeys (`webcredentials`). Served at the RP ID's origin.",
      responses: {
        "200": json("The association", {
          type: "object",
          required: ["webcredentials"],
          properties: { webcredentials: { type: "object" } },
        }),
        ...unconfigured("APPLE_APP_IDS"),
      },
    }),
    (c) => {
      const apps = c.var.config.appleApps;
      if (unusable(apps)) return c.json({ error: apps.problem }, 503);
      if (apps.length === 0) return errorResponse(c, 404, NOT_CONFIGURED);
      return c.json(appleAppSiteAssociation(apps), 200, cached);
    },
  );
