CREATE TABLE `audit_events` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`user_id` integer NOT NULL,
	`actor` text NOT NULL,
	`at` integer NOT NULL,
	`ip` text,
	`user_agent` text,
	`data` text DEFAULT '{}' NOT NULL,
	`closed` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_events_user_at` ON `audit_events` (`user_id`,`at`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_at` ON `audit_events` (`at`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_type_at` ON `audit_events` (`type`,`at`,`id`);--> statement-breakpoint
CREATE TABLE `audit_failed_sign_in_windows` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`window_start` integer NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`last_event_id` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `webhook_outbox` (
	`event_id` text PRIMARY KEY NOT NULL,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`window_start` integer NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`last_attempt_at` integer,
	`last_status` integer,
	`last_error` text,
	`failed_at` integer,
	FOREIGN KEY (`event_id`) REFERENCES `audit_events`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_outbox_due` ON `webhook_outbox` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_outbox_failed` ON `webhook_outbox` (`state`,`failed_at`,`event_id`);--> statement-breakpoint
ALTER TABLE `users` ADD `banned_until` integer;--> statement-breakpoint
ALTER TABLE `users` ADD `ban_reason` text;--> statement-breakpoint
ALTER TABLE `users` ADD `last_sign_in_at` integer;