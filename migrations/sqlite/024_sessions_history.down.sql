-- Reverses 024 (SQLite mirror): nothing to undo before 018's table goes.
SELECT 1;
