/** Every plain-text answer of the accounts area, worded as the contract and the README give them. */
export const AuthMessage = {
  // From the spec.
  userExists: "User with this email already exists.",
  userCreated: "User created. Please check your email for a verification code.",
  emailAndTokenRequired: "Email and token are required.",
  invalidToken: "Invalid or expired verification token.",
  emailVerified: "Email verified successfully.",
  invalidCredentials: "Invalid email or password.",
  notVerified: "Email not verified. Please check your inbox.",
  // Our decisions where the spec is silent (see the README).
  emailAndPasswordRequired: "Email and password are required.",
  emailAndPasswordStrings: "Email and password must be strings.",
  emailAndTokenStrings: "Email and token must be strings.",
  invalidEmail: "Please provide a valid email address.",
  passwordTooShort: "Password must be at least 8 characters long.",
  passwordTooLong: "Password must be at most 72 bytes long (UTF-8).",
  internalError: "Internal server error.",
} as const;
