-- Revisions, the per-owner clocks and the tombstones of the changes feed, which drizzle-kit cannot express:
-- triggers that move an owner's clock on (and write a deleted note's tombstone) in the very statement that
-- writes the note, whatever the path (a plain create, an idempotent one, an update, a delete, an account's
-- deletion). A note's owner in the clocks is its user, or 0 for public notes. See docs/sync.md.
--
-- The notes written before this migration: numbered in id order within each owner, and the clocks set to
-- match (before the triggers exist, so nothing fires).
UPDATE `notes` SET `revision` = `numbered`.`n`
FROM (SELECT `id`, row_number() OVER (PARTITION BY `user_id` ORDER BY `id`) AS `n` FROM `notes`) AS `numbered`
WHERE `notes`.`id` = `numbered`.`id`;
--> statement-breakpoint
INSERT INTO `note_clocks` (`owner`, `seq`) SELECT coalesce(`user_id`, 0), max(`revision`) FROM `notes` GROUP BY coalesce(`user_id`, 0);
--> statement-breakpoint
-- A write that numbered its note (revision = the owner's clock + 1, so RETURNING shows it) moves the clock on.
CREATE TRIGGER `notes_clock_after_insert` AFTER INSERT ON `notes` WHEN new.`revision` > 0 BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (coalesce(new.`user_id`, 0), new.`revision`)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = max(`seq`, excluded.`seq`);
END;
--> statement-breakpoint
CREATE TRIGGER `notes_clock_after_update` AFTER UPDATE OF `revision` ON `notes` WHEN new.`revision` > old.`revision` BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (coalesce(new.`user_id`, 0), new.`revision`)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = max(`seq`, excluded.`seq`);
END;
--> statement-breakpoint
-- A safety net for a write that did not number its note: the clock moves on and the note takes its number.
CREATE TRIGGER `notes_clock_after_unnumbered_insert` AFTER INSERT ON `notes` WHEN new.`revision` = 0 BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (coalesce(new.`user_id`, 0), 1)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	UPDATE `notes` SET `revision` = (SELECT `seq` FROM `note_clocks` WHERE `owner` = coalesce(new.`user_id`, 0)) WHERE `id` = new.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `notes_clock_after_unnumbered_update` AFTER UPDATE OF `title`, `content` ON `notes`
	WHEN new.`revision` = old.`revision` AND (new.`title` IS NOT old.`title` OR new.`content` IS NOT old.`content`) BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (coalesce(new.`user_id`, 0), 1)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	UPDATE `notes` SET `revision` = (SELECT `seq` FROM `note_clocks` WHERE `owner` = coalesce(new.`user_id`, 0)) WHERE `id` = new.`id`;
END;
--> statement-breakpoint
-- A deleted note leaves a tombstone, numbered by its owner's clock, stamped in milliseconds since the epoch.
CREATE TRIGGER `notes_tombstone_after_delete` AFTER DELETE ON `notes` BEGIN
	INSERT INTO `note_clocks` (`owner`, `seq`) VALUES (coalesce(old.`user_id`, 0), 1)
		ON CONFLICT (`owner`) DO UPDATE SET `seq` = `seq` + 1;
	INSERT INTO `note_tombstones` (`owner`, `seq`, `note_id`, `deleted_at`)
		VALUES (
			coalesce(old.`user_id`, 0),
			(SELECT `seq` FROM `note_clocks` WHERE `owner` = coalesce(old.`user_id`, 0)),
			old.`id`,
			CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
		);
END;
