CREATE TABLE `live_tickets` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `live_tickets_session_id` ON `live_tickets` (`session_id`);--> statement-breakpoint
CREATE INDEX `live_tickets_expires_at` ON `live_tickets` (`expires_at`);