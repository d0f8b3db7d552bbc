/** The application's name: the sender's display name by default, the TOTP issuer, the passkeys' relying party name. */
export const APP_NAME = "Notes API";
