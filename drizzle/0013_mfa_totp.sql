CREATE TABLE `mfa_challenges` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`checked_hash` text NOT NULL,
	`device_id` text,
	`expires_at` integer NOT NULL,
	`tries` integer DEFAULT 0 NOT NULL,
	`used` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mfa_challenges_expires_at` ON `mfa_challenges` (`expires_at`);--> statement-breakpoint
CREATE TABLE `mfa_factors` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`sealed_secret` text NOT NULL,
	`status` text NOT NULL,
	`last_used_step` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `mfa_recovery_codes` (
	`user_id` integer NOT NULL,
	`code_hash` text NOT NULL,
	PRIMARY KEY(`user_id`, `code_hash`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
