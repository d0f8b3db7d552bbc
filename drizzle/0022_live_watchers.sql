CREATE TABLE `live_watchers` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`since` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
