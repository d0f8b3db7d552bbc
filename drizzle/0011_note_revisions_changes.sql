CREATE TABLE `note_clocks` (
	`owner` integer PRIMARY KEY NOT NULL,
	`seq` integer DEFAULT 0 NOT NULL,
	`pruned_through` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `note_tombstones` (
	`owner` integer NOT NULL,
	`seq` integer NOT NULL,
	`note_id` integer NOT NULL,
	`deleted_at` integer NOT NULL,
	PRIMARY KEY(`owner`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `note_tombstones_deleted_at` ON `note_tombstones` (`deleted_at`);--> statement-breakpoint
ALTER TABLE `idempotency_keys` ADD `revision` integer;--> statement-breakpoint
ALTER TABLE `notes` ADD `revision` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `notes_user_id_revision` ON `notes` (`user_id`,`revision`);