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
  resendAccepted: "If this email belongs to an unverified account, a verification code has been sent.",
  emailRequired: "Email is required.",
  emailString: "Email must be a string.",
  mailThrottled: "Please wait before requesting another verification code.",
  verifyThrottled: "Too many failed verification attempts. Please try again later.",
  loginLocked: "Too many failed login attempts. Please try again later.",
  clientThrottled: "Too many requests. Please slow down.",
  bodyTooLarge: "Request body is too large (limit 16 KiB).",
  internalError: "Internal server error.",
} as const;
