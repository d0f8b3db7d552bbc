import type { AccessClaims } from "../../lib/access-token";
import { describeError, type Logger } from "../../lib/log";
import type { Bound } from "../../db/compiled";
import type { Database } from "../../types";
import { completeUpload, releaseUpload } from "./store";
import { LengthMismatch, streamToR2, TooSlow, type StoredBytes, type UploadBody } from "./upload";

/**
 * An upload after its reservation: the bytes into R2, then the row made visible and the note moved on. On
 * any failure the reservation is released (its bytes leave the quota at once) and an object R2 may hold is
 * deleted; what a failure here leaves behind (D1 or R2 unreachable) the hourly cron removes.
 */

/** What became of a reserved upload. */
export type UploadOutcome =
  /** Stored; `watched`: the note's readers someone may be watching (notes/area.ts). */
  | { stored: StoredBytes; watched: { userId: number }[] }
  /** Nothing stored: the body's length was not its Content-Length (400), or it came too slowly (408). */
  | { refused: "length" | "slow" }
  /** Nothing stored: the caller's session ended (401), or the note went (404), while the bytes came. */
  | { gone: "session" | "note" };

/** Where an upload goes: the request's database, the caller, the bucket, the log, and the watchers' statement. */
export interface UploadTarget {
  db: Database;
  caller: AccessClaims;
  bucket: R2Bucket;
  log: Logger;
  watching: Bound<{ userId: number }>;
}

/** Stores the bytes of reserved upload `id` on note `noteId`, or releases it. */
export async function finishUpload(
  { db, caller, bucket, log, watching }: UploadTarget,
  reserved: { id: string; noteId: number },
  upload: UploadBody,
): Promise<UploadOutcome> {
  const giveUp = () => releaseAndRemove({ db, bucket, log }, reserved.id);
  let bytes: StoredBytes;
  try {
    bytes = await streamToR2(bucket, reserved.id, upload);
  } catch (err) {
    await giveUp();
    if (err instanceof LengthMismatch) return { refused: "length" };
    if (err instanceof TooSlow) return { refused: "slow" };
    throw err;
  }
  let completed: Awaited<ReturnType<typeof completeUpload>>;
  try {
    completed = await completeUpload(db, caller, Date.now(), { ...reserved, ...bytes }, watching);
  } catch (err) {
    await giveUp();
    throw err;
  }
  if (completed?.done) return { stored: bytes, watched: completed.watched };
  await giveUp();
  return { gone: completed === undefined ? "session" : "note" };
}

/** The reservation's row goes (its key is queued), and the object, if R2 has one; a failure is the cron's to finish. */
async function releaseAndRemove(
  { db, bucket, log }: Omit<UploadTarget, "caller" | "watching">,
  id: string,
): Promise<void> {
  await releaseUpload(db, id).catch((err: unknown) => log.error("attachment_release_failed", describeError(err)));
  await removeObject(bucket, log, id);
}

/** Deletes an attachment's object now; if R2 fails, the key queued by its row's deletion lets the cron do it. */
export async function removeObject(bucket: R2Bucket, log: Logger, id: string): Promise<void> {
  await bucket.delete(id).catch((err: unknown) => log.warn("attachment_object_delete_failed", describeError(err)));
}
