-- Full-text search over notes (GET /notes?q=…), which drizzle-kit cannot express: an FTS5 index over
-- the title and content of `notes` (external content: the text is stored once, in `notes`), kept exact
-- by the three triggers below, in the same statement as every write. See docs/notes-idempotency-search.md.
-- Words match case- and accent-insensitively (unicode61 with remove_diacritics 2).
CREATE VIRTUAL TABLE `notes_fts` USING fts5(
	`title`,
	`content`,
	content = 'notes',
	content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
--> statement-breakpoint
CREATE TRIGGER `notes_fts_after_insert` AFTER INSERT ON `notes` BEGIN
	INSERT INTO `notes_fts` (`rowid`, `title`, `content`) VALUES (new.`id`, new.`title`, new.`content`);
END;
--> statement-breakpoint
-- An external-content index removes a row by the text it indexed, which `old` still holds.
CREATE TRIGGER `notes_fts_after_delete` AFTER DELETE ON `notes` BEGIN
	INSERT INTO `notes_fts` (`notes_fts`, `rowid`, `title`, `content`) VALUES ('delete', old.`id`, old.`title`, old.`content`);
END;
--> statement-breakpoint
-- Only a change of the indexed text re-indexes the note.
CREATE TRIGGER `notes_fts_after_update` AFTER UPDATE OF `title`, `content` ON `notes` BEGIN
	INSERT INTO `notes_fts` (`notes_fts`, `rowid`, `title`, `content`) VALUES ('delete', old.`id`, old.`title`, old.`content`);
	INSERT INTO `notes_fts` (`rowid`, `title`, `content`) VALUES (new.`id`, new.`title`, new.`content`);
END;
--> statement-breakpoint
-- The notes written before this migration.
INSERT INTO `notes_fts` (`notes_fts`) VALUES ('rebuild');
