ALTER TABLE `mfa_challenges` DROP COLUMN `provider`;--> statement-breakpoint
ALTER TABLE `sessions` DROP COLUMN `provider`;