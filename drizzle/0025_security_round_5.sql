CREATE TABLE `oauth_id_token_uses` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `oauth_id_token_uses_expires_at` ON `oauth_id_token_uses` (`expires_at`);--> statement-breakpoint
ALTER TABLE `email_change_reverts` ADD `session_id` text;--> statement-breakpoint
ALTER TABLE `mfa_factors` ADD `added_by_session` text;--> statement-breakpoint
ALTER TABLE `passkeys` ADD `added_by_session` text;--> statement-breakpoint
ALTER TABLE `passkeys` ADD `counter_regressed_at` integer;