import type { Database } from "../../types";
import { REMOVAL_CALLS_PER_RUN, REMOVALS_PER_CALL } from "./policy";
import { abandonedUploads, forgetRemovals, queuedRemovals } from "./store";

/**
 * The D1 half of the attachments' share of the hourly clean-up (scheduled.ts), in its batch: reservations
 * whose upload can no longer finish go, and their keys are queued, so that removeQueuedObjects, run after the
 * batch, deletes in the same run any object they left.
 */
export function attachmentsCleanUp(db: Database, now: number) {
  return { abandonedUploads: abandonedUploads(db, now) };
}

/**
 * The R2 half of the hourly clean-up (scheduled.ts), after the D1 batch has removed the uploads that never
 * completed: every key in `attachment_removals` (each deleted row's, queued by a trigger) has its object
 * deleted, whether or not it still exists (R2's delete of a missing key succeeds), in calls of up to
 * REMOVALS_PER_CALL keys. A key is forgotten once it is older than REMOVALS_KEPT_MS, so that an object an
 * upload wrote after its row was deleted goes at a later run. So no object outlives its row by more than
 * one run, and no row ever points at a missing object: an object is deleted only once its row is gone.
 */

export interface ObjectsRemoved {
  /** Keys whose objects were deleted in this run. */
  removedObjects: number;
  /** Keys forgotten: old enough that no upload can write their objects any more. */
  forgottenRemovals: number;
}

export async function removeQueuedObjects(db: Database, bucket: R2Bucket, now: number): Promise<ObjectsRemoved> {
  let after = "";
  let removedObjects = 0;
  for (let call = 0; call < REMOVAL_CALLS_PER_RUN; call++) {
    const keys = await queuedRemovals(db, after);
    if (keys.length === 0) break;
    await bucket.delete(keys);
    removedObjects += keys.length;
    after = keys.at(-1)!;
    if (keys.length < REMOVALS_PER_CALL) break;
  }
  // Only keys this run has deleted the objects of (up to `after`): the rest wait for the next run.
  const forgottenRemovals = removedObjects > 0 ? await forgetRemovals(db, after, now) : 0;
  return { removedObjects, forgottenRemovals };
}
