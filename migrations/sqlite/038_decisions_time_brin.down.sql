-- Reverses 038: nothing was built.
SELECT 1;
