-- Reverses 044 (SQLite mirror): nothing to undo before 043's table goes.
SELECT 1;
