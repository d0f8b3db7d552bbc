ALTER TABLE `email_change_reverts` ADD `created_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `mfa_factors` ADD `wrong_window_start` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `mfa_factors` ADD `wrong_in_window` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `mfa_factors` ADD `noticed_window` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- The changes confirmed before this column existed: each was confirmed a revert lifetime (7 days) before its expiry.
UPDATE `email_change_reverts` SET `created_at` = `expires_at` - 604800000;
