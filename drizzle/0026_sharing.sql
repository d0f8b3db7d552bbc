CREATE TABLE `note_links` (
	`id` text PRIMARY KEY NOT NULL,
	`note_id` integer NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `note_links_token_hash_unique` ON `note_links` (`token_hash`);--> statement-breakpoint
CREATE INDEX `note_links_note_id_created_at` ON `note_links` (`note_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `note_shares` (
	`id` text PRIMARY KEY NOT NULL,
	`note_id` integer NOT NULL,
	`email` text NOT NULL,
	`role` text NOT NULL,
	`created_at` integer NOT NULL,
	`grantee_id` integer,
	FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`grantee_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `note_shares_note_id_email` ON `note_shares` (`note_id`,`email`);--> statement-breakpoint
CREATE INDEX `note_shares_grantee_id_note_id` ON `note_shares` (`grantee_id`,`note_id`) WHERE "note_shares"."grantee_id" is not null;--> statement-breakpoint
CREATE INDEX `note_shares_unbound_email` ON `note_shares` (`email`) WHERE "note_shares"."grantee_id" is null;--> statement-breakpoint
CREATE TABLE `share_mail_addresses` (
	`owner_id` integer NOT NULL,
	`email` text NOT NULL,
	`mailed_at` integer NOT NULL,
	PRIMARY KEY(`owner_id`, `email`),
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `share_mail_addresses_owner_id_mailed_at` ON `share_mail_addresses` (`owner_id`,`mailed_at`);--> statement-breakpoint
CREATE INDEX `share_mail_addresses_mailed_at` ON `share_mail_addresses` (`mailed_at`);--> statement-breakpoint
CREATE TABLE `shared_changes` (
	`reader` integer NOT NULL,
	`note_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`ended_at` integer,
	PRIMARY KEY(`reader`, `note_id`)
);
--> statement-breakpoint
CREATE INDEX `shared_changes_reader_seq` ON `shared_changes` (`reader`,`seq`);--> statement-breakpoint
CREATE INDEX `shared_changes_ended_at` ON `shared_changes` (`ended_at`) WHERE "shared_changes"."ended_at" is not null;--> statement-breakpoint
ALTER TABLE `notes` ADD `updated_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Written by hand below (drizzle-kit cannot express triggers). The notes written before this migration changed
-- last when they were created.
UPDATE `notes` SET `updated_at` = `created_at`;
--> statement-breakpoint
-- The feed of the notes shared with a reader (docs/sync.md, "Notes shared with you"): every change a reader can
-- see moves the reader's own clock on (its `note_clocks` row, which its own notes use too) and gives the note's
-- row in `shared_changes` that number, in the very statement that makes the change, whatever the path. A share
-- that reaches an account starts the note in its feed.
CREATE TRIGGER `note_shares_feed_after_insert` AFTER INSERT ON `note_shares` WHEN new.`grantee_id` IS NOT NULL BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (new.`grantee_id`, 1)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	INSERT INTO `shared_changes` (`reader`, `note_id`, `seq`, `ended_at`)
		VALUES (new.`grantee_id`, new.`note_id`, (SELECT `seq` FROM `note_clocks` WHERE `owner` = new.`grantee_id`), NULL)
		ON CONFLICT (`reader`, `note_id`) DO UPDATE SET `seq` = excluded.`seq`, `ended_at` = NULL;
END;
--> statement-breakpoint
-- A share made before its address was verified reaches the account that verifies it: the same start.
CREATE TRIGGER `note_shares_feed_after_bind` AFTER UPDATE OF `grantee_id` ON `note_shares`
	WHEN old.`grantee_id` IS NULL AND new.`grantee_id` IS NOT NULL BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (new.`grantee_id`, 1)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	INSERT INTO `shared_changes` (`reader`, `note_id`, `seq`, `ended_at`)
		VALUES (new.`grantee_id`, new.`note_id`, (SELECT `seq` FROM `note_clocks` WHERE `owner` = new.`grantee_id`), NULL)
		ON CONFLICT (`reader`, `note_id`) DO UPDATE SET `seq` = excluded.`seq`, `ended_at` = NULL;
END;
--> statement-breakpoint
-- A share's end (revoked, left, its note deleted with ON DELETE CASCADE, its grantee's account deleted) is a
-- tombstone in the grantee's feed, unless another share of the note still reaches the same account.
CREATE TRIGGER `note_shares_feed_after_delete` AFTER DELETE ON `note_shares`
	WHEN old.`grantee_id` IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM `note_shares` WHERE `note_id` = old.`note_id` AND `grantee_id` = old.`grantee_id`) BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (old.`grantee_id`, 1)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	INSERT INTO `shared_changes` (`reader`, `note_id`, `seq`, `ended_at`)
		VALUES (
			old.`grantee_id`,
			old.`note_id`,
			(SELECT `seq` FROM `note_clocks` WHERE `owner` = old.`grantee_id`),
			CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
		)
		ON CONFLICT (`reader`, `note_id`) DO UPDATE SET `seq` = excluded.`seq`, `ended_at` = excluded.`ended_at`;
END;
--> statement-breakpoint
-- Every change of a shared note (its revision moved on: title, content, an attachment), by its owner or an
-- editor, moves each grantee's clock on and gives the note's row there the new number.
CREATE TRIGGER `notes_shared_feed_after_update` AFTER UPDATE OF `revision` ON `notes` WHEN new.`revision` > old.`revision` BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`)
		SELECT DISTINCT `grantee_id`, 1 FROM `note_shares` WHERE `note_id` = new.`id` AND `grantee_id` IS NOT NULL
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	INSERT INTO `shared_changes` (`reader`, `note_id`, `seq`, `ended_at`)
		SELECT DISTINCT `grantee_id`, new.`id`, (SELECT `seq` FROM `note_clocks` WHERE `owner` = `grantee_id`), NULL
		FROM `note_shares` WHERE `note_id` = new.`id` AND `grantee_id` IS NOT NULL
		ON CONFLICT (`reader`, `note_id`) DO UPDATE SET `seq` = excluded.`seq`, `ended_at` = NULL;
END;
--> statement-breakpoint
-- A seam across areas (docs/design.md, "Seams"): a share reaches the account that verifies its address, whatever
-- the path that verifies it (the code of a registration, a provider's sign-in, a confirmed e-mail change or its
-- undo, a reset), in that path's own statement. Never the note's own owner.
CREATE TRIGGER `users_bind_note_shares_after_insert` AFTER INSERT ON `users` WHEN new.`isVerified` = 1 BEGIN
	UPDATE `note_shares` SET `grantee_id` = new.`id`
		WHERE `email` = new.`email` AND `grantee_id` IS NULL
		AND NOT EXISTS (SELECT 1 FROM `notes` WHERE `notes`.`id` = `note_shares`.`note_id` AND `notes`.`user_id` = new.`id`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_bind_note_shares_after_update` AFTER UPDATE OF `email`, `isVerified` ON `users` WHEN new.`isVerified` = 1 BEGIN
	UPDATE `note_shares` SET `grantee_id` = new.`id`
		WHERE `email` = new.`email` AND `grantee_id` IS NULL
		AND NOT EXISTS (SELECT 1 FROM `notes` WHERE `notes`.`id` = `note_shares`.`note_id` AND `notes`.`user_id` = new.`id`);
END;
