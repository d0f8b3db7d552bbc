CREATE TABLE `attachment_removals` (
	`key` text PRIMARY KEY NOT NULL,
	`queued_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `attachment_removals_queued_at` ON `attachment_removals` (`queued_at`);--> statement-breakpoint
CREATE TABLE `attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`note_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`filename` text NOT NULL,
	`size` integer NOT NULL,
	`content_type` text,
	`sha256` text,
	`created_at` integer NOT NULL,
	`stored_at` integer,
	FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `attachments_note_id_created_at` ON `attachments` (`note_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `attachments_user_id_size` ON `attachments` (`user_id`,`size`);--> statement-breakpoint
CREATE INDEX `attachments_uploading` ON `attachments` (`created_at`) WHERE "attachments"."stored_at" is null;--> statement-breakpoint
-- Written by hand below (drizzle-kit cannot express triggers): every deleted attachment row queues its R2
-- object's key (the row's id) for the cron, in the very statement that deletes the row, whatever deletes it:
-- DELETE /notes/{id}/attachments/{attachmentId}, a failed upload's release, the cascade of a note's or an
-- account's deletion, the cron's removal of an upload that never completed. See docs/attachments.md.
CREATE TRIGGER `attachments_queue_removal` AFTER DELETE ON `attachments` BEGIN
	INSERT INTO `attachment_removals` (`key`, `queued_at`)
		VALUES (old.`id`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
		ON CONFLICT (`key`) DO NOTHING;
END;
