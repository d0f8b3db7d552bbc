/** What the loopback SMTP peers share with the tests running in the Workers runtime. */
export interface ReceivedMail {
  server: string;
  username: string | null;
  password: string | null;
  mailFrom: string | null;
  rcptTo: string[];
  raw: string;
}

export type SmtpPeer =
  | "mailbox"
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
