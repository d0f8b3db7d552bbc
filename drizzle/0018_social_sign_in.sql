CREATE TABLE `oauth_identities` (
	`provider` text NOT NULL,
	`issuer` text NOT NULL,
	`subject` text NOT NULL,
	`user_id` integer NOT NULL,
	`email` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`issuer`, `subject`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_identities_user_id_provider` ON `oauth_identities` (`user_id`,`provider`);--> statement-breakpoint
CREATE TABLE `oauth_login_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`sign_in_epoch` integer NOT NULL,
	`provider` text NOT NULL,
	`code_challenge` text NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `oauth_login_codes_expires_at` ON `oauth_login_codes` (`expires_at`);--> statement-breakpoint
CREATE TABLE `oauth_states` (
	`state_hash` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`app_state` text,
	`code_challenge` text NOT NULL,
	`code_verifier` text NOT NULL,
	`nonce` text NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `oauth_states_expires_at` ON `oauth_states` (`expires_at`);--> statement-breakpoint
ALTER TABLE `mfa_challenges` ADD `provider` text;--> statement-breakpoint
ALTER TABLE `sessions` ADD `provider` text;