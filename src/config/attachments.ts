import { intSetting } from "./parse";

/** The settings of attachments (notes/attachments/): the largest file, each account's quota, a signed link's life. */

export interface AttachmentSettings {
  /** ATTACHMENT_MAX_BYTES: the largest file; a larger Content-Length is a 413 before anything is stored. */
  maxBytes: number;
  /** ATTACHMENT_QUOTA_BYTES: the bytes one account may store in all, uploads under way included. */
  quotaBytes: number;
  /** ATTACHMENT_URL_TTL_SECONDS: how long a signed link (an attachment's `url`) stays valid. */
  urlTtlSeconds: number;
}

/** R2's largest single upload (5 GiB); a Worker's request body is far smaller on every plan anyway. */
const R2_SINGLE_PUT_BYTES = 5 * 1024 ** 3;
/** A quota beyond any bucket anyone pays for (1 PiB), still exact in a double. */
const MAX_QUOTA_BYTES = 1024 ** 5;
/** A link's life is the deployment's choice, from a second up to a year. */
const MAX_URL_TTL_SECONDS = 365 * 24 * 3600;

export function attachmentSettings(env: Env): AttachmentSettings {
  return {
    maxBytes: intSetting("ATTACHMENT_MAX_BYTES", env.ATTACHMENT_MAX_BYTES, 25 * 1024 ** 2, 1, R2_SINGLE_PUT_BYTES),
    quotaBytes: intSetting("ATTACHMENT_QUOTA_BYTES", env.ATTACHMENT_QUOTA_BYTES, 1024 ** 3, 1, MAX_QUOTA_BYTES),
    urlTtlSeconds: intSetting(
      "ATTACHMENT_URL_TTL_SECONDS",
      env.ATTACHMENT_URL_TTL_SECONDS,
      900,
      1,
      MAX_URL_TTL_SECONDS,
    ),
  };
}
