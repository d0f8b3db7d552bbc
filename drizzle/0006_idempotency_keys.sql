CREATE TABLE `idempotency_keys` (
	`id` integer PRIMARY KEY NOT NULL,
	`user_id` integer,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`claim` text NOT NULL,
	`response` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `idempotency_keys_user_id_key` ON `idempotency_keys` (`user_id`,`key`);--> statement-breakpoint
CREATE UNIQUE INDEX `idempotency_keys_public_key` ON `idempotency_keys` (`key`) WHERE "idempotency_keys"."user_id" is null;--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_at` ON `idempotency_keys` (`created_at`);