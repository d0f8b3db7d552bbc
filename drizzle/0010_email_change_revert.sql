CREATE TABLE `email_change_reverts` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`old_email` text NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `email_change_reverts_user_id` ON `email_change_reverts` (`user_id`);--> statement-breakpoint
CREATE INDEX `email_change_reverts_expires_at` ON `email_change_reverts` (`expires_at`);