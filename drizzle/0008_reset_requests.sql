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
CREATE INDEX `reset_requests_expires_at` ON `reset_requests` (`expires_at`);