ALTER TABLE `notes` ADD `user_id` integer REFERENCES users(id);--> statement-breakpoint
CREATE INDEX `notes_user_id_id` ON `notes` (`user_id`,`id`);