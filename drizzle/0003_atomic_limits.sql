CREATE TABLE `one_time_codes` (
	`user_id` integer NOT NULL,
	`purpose` text NOT NULL,
	`code` text NOT NULL,
	`expires_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`window_start` integer DEFAULT 0 NOT NULL,
	`window_attempts` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`user_id`, `purpose`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `login_failures` ADD `lastAttemptAt` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `createdAt` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- The live verification codes move to one_time_codes before their columns go.
INSERT INTO `one_time_codes` (`user_id`, `purpose`, `code`, `expires_at`, `attempts`, `window_start`, `window_attempts`)
	SELECT `id`, 'verify_email', `verificationToken`, `tokenExpiry`, `failedCodeAttempts`, `verifyWindowStart`, `verifyFailures`
	FROM `users` WHERE `verificationToken` IS NOT NULL AND `tokenExpiry` IS NOT NULL;--> statement-breakpoint
-- An existing account's creation time was not recorded: its first mail is the best estimate, else now.
UPDATE `users` SET `createdAt` = CASE WHEN `mailWindowStart` > 0 THEN `mailWindowStart`
	ELSE CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END;--> statement-breakpoint
ALTER TABLE `users` DROP COLUMN `verificationToken`;--> statement-breakpoint
ALTER TABLE `users` DROP COLUMN `tokenExpiry`;--> statement-breakpoint
ALTER TABLE `users` DROP COLUMN `failedCodeAttempts`;--> statement-breakpoint
ALTER TABLE `users` DROP COLUMN `verifyWindowStart`;--> statement-breakpoint
ALTER TABLE `users` DROP COLUMN `verifyFailures`;