CREATE TABLE `device_login_failures` (
	`device_id` text PRIMARY KEY NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`locked_until` integer DEFAULT 0 NOT NULL,
	`last_attempt_at` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `reset_mail_allowances` (
	`email` text NOT NULL,
	`client` text NOT NULL,
	`last_mail_at` integer DEFAULT 0 NOT NULL,
	`window_start` integer DEFAULT 0 NOT NULL,
	`mails_in_window` integer DEFAULT 0 NOT NULL,
	`claim` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`email`, `client`)
);
--> statement-breakpoint
CREATE TABLE `reset_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`code` text NOT NULL,
	`expires_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `reset_requests_user_id` ON `reset_requests` (`user_id`);--> statement-breakpoint
CREATE INDEX `reset_requests_expires_at` ON `reset_requests` (`expires_at`);--> statement-breakpoint
ALTER TABLE `sessions` ADD `password_failures` integer DEFAULT 0 NOT NULL;