CREATE TABLE `reset_mail_allowances` (
	`email` text NOT NULL,
	`client` text NOT NULL,
	`last_mail_at` integer DEFAULT 0 NOT NULL,
	`window_start` integer DEFAULT 0 NOT NULL,
	`mails_in_window` integer DEFAULT 0 NOT NULL,
	`claim` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`email`, `client`)
);
