CREATE TABLE `deployment_windows` (
	`name` text PRIMARY KEY NOT NULL,
	`window_start` integer DEFAULT 0 NOT NULL,
	`count` integer DEFAULT 0 NOT NULL
);
