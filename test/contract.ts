/**
 * The answers the contract pins, written out here on their own rather than read from the app's
 * constants: a test that checks one of these fails if the app's constant ever drifts from the contract.
 * Messages of our own (where the contract is silent) are checked against the app's constants instead
 * (`AuthMessage`, `NoteMessage`).
 */
export const Contract = {
  userExists: "User with this email already exists.",
  userCreated: "User created. Please check your email for a verification code.",
  emailAndTokenRequired: "Email and token are required.",
  invalidToken: "Invalid or expired verification token.",
  emailVerified: "Email verified successfully.",
  invalidCredentials: "Invalid email or password.",
  notVerified: "Email not verified. Please check your inbox.",
  invalidNoteId: "Invalid note id",
  noteNotFound: "Note not found",
  methodNotAllowed: "Method not allowed",
  verificationSubject: "Verify Your Email Address",
} as const;
