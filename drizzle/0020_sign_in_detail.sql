ALTER TABLE `mfa_challenges` ADD `detail` text;--> statement-breakpoint
ALTER TABLE `sessions` ADD `detail` text;--> statement-breakpoint
-- Written by hand after drizzle-kit's columns: what a sign-in method knows beyond `amr` is one JSON value now
-- (auth/core/gate.ts, SignInDetail); the provider of social sign-ins moves into it, and 0021 drops its column.
UPDATE `sessions` SET `detail` = json_object('provider', `provider`) WHERE `provider` IS NOT NULL;--> statement-breakpoint
UPDATE `mfa_challenges` SET `detail` = json_object('provider', `provider`) WHERE `provider` IS NOT NULL;
