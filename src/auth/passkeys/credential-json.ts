import * as v from "valibot";
import { AuthMessage } from "../messages";

/**
 * What a browser or a native platform sends back from a ceremony, as WebAuthn Level 3 JSON
 * (`PublicKeyCredential.toJSON()`, Android's Credential Manager, iOS's AuthenticationServices): the
 * shapes the request bodies of auth/requests.ts take. Only the fields the server reads are checked here,
 * each a base64url string; what they hold is checked by webauthn.ts. Anything else is a 400 that says so.
 */

const invalid = AuthMessage.passkeyResponseInvalid;

const base64url = (description: string) =>
  v.pipe(v.string(invalid), v.regex(/^[A-Za-z0-9_-]+$/, invalid), v.description(`${description}, base64url`));

/** The response field of a body: its own message when missing, one message for any other mistake. */
function credential<const E extends v.ObjectEntries>(entries: E, description: string) {
  const shape = v.object(
    {
      id: base64url("The credential id"),
      rawId: base64url("The credential id again"),
      type: v.literal("public-key", invalid),
      response: v.object(entries, invalid),
      authenticatorAttachment: v.optional(v.nullable(v.string(invalid))),
      clientExtensionResults: v.optional(v.record(v.string(), v.unknown(), invalid)),
    },
    (issue) => (issue.input === undefined || issue.input === null ? AuthMessage.passkeyResponseRequired : invalid),
  );
  return v.pipe(shape, v.description(description));
}

/** RegistrationResponseJSON: the new credential of navigator.credentials.create(). */
export const RegistrationResponse = credential(
  {
    clientDataJSON: base64url("The client data"),
    attestationObject: base64url("The attestation object (CBOR)"),
    transports: v.optional(v.array(v.string(invalid), invalid)),
  },
  "The new credential as JSON (RegistrationResponseJSON), made with the options of POST /auth/passkeys/register/options.",
);
export type RegistrationResponseInput = v.InferOutput<typeof RegistrationResponse>;

/** AuthenticationResponseJSON: the assertion of navigator.credentials.get(). */
export const AuthenticationResponse = credential(
  {
    clientDataJSON: base64url("The client data"),
    authenticatorData: base64url("The authenticator data"),
    signature: base64url("The signature"),
    userHandle: v.optional(v.nullable(base64url("The account's WebAuthn user handle"))),
  },
  "The assertion as JSON (AuthenticationResponseJSON), made with the options of POST /auth/passkeys/login/options.",
);
export type AuthenticationResponseInput = v.InferOutput<typeof AuthenticationResponse>;
