/** What the loopback SMTP peers share with the tests running in the Workers runtime. */
export interface ReceivedMail {
  server: string;
  username: string | null;
  password: string | null;
  mailFrom: string | null;
  rcptTo: string[];
  /** The command lines of the connection up to DATA, as the client sent them (AUTH arguments redacted). */
  commands: string[];
  raw: string;
}

export type SmtpPeer =
  | "mailbox"
  | "plaintext"
  | "asciiOnly"
  | "noAuth"
  | "rejectSender"
  | "rejectRecipient"
  | "rejectLogin"
  | "silent"
  | "closeAfterGreeting"
  | "closeAfterEhlo"
  | "closeOnQuit"
  | "tripwire"
  | "refused";

export type SmtpFixture = {
  ports: Record<SmtpPeer, number>;
  inspectUrl: string;
};

/**
 * The secret the tests' Turnstile verifier (on the inspection server, /turnstile/siteverify) accepts with the token
 * "pass".
 */
export const TURNSTILE_TEST_SECRET = "turnstile-test-secret";
