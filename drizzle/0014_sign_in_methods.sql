-- Second factors are keyed by (user_id, kind), so that factors of several kinds can stand side by side;
-- every factor enrolled so far is a TOTP one, and keeps its secret, status and last step.
CREATE TABLE `__new_mfa_factors` (
	`user_id` integer NOT NULL,
	`kind` text NOT NULL,
	`sealed_secret` text NOT NULL,
	`status` text NOT NULL,
	`last_used_step` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`user_id`, `kind`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_mfa_factors`("user_id", "kind", "sealed_secret", "status", "last_used_step", "created_at") SELECT "user_id", 'totp', "sealed_secret", "status", "last_used_step", "created_at" FROM `mfa_factors`;--> statement-breakpoint
DROP TABLE `mfa_factors`;--> statement-breakpoint
ALTER TABLE `__new_mfa_factors` RENAME TO `mfa_factors`;--> statement-breakpoint
-- A challenge waiting for its second factor records the account's sign-in epoch and how the first proof
-- was made, no longer the password hash it checked. The few in flight (they live 5 minutes) are dropped:
-- those sign-ins start again.
DROP TABLE `mfa_challenges`;--> statement-breakpoint
CREATE TABLE `mfa_challenges` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`sign_in_epoch` integer NOT NULL,
	`amr` text NOT NULL,
	`device_id` text,
	`expires_at` integer NOT NULL,
	`tries` integer DEFAULT 0 NOT NULL,
	`used` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mfa_challenges_expires_at` ON `mfa_challenges` (`expires_at`);--> statement-breakpoint
ALTER TABLE `sessions` ADD `amr` text DEFAULT 'pwd' NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `sign_in_epoch` integer DEFAULT 0 NOT NULL;
