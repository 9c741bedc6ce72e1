-- 031_person_class: a policy (contract 0.2.0) may classify a status as
-- waiting for a person (`awaiting-person`): the work is paused until a person
-- gives input or an authorization. Such a class is not terminal, so it is
-- stored with terminal = false and no outcome, and `person` names what the
-- person is asked for. A terminal class never has one.
ALTER TABLE nomos_status_classes
    ADD COLUMN person TEXT NULL CHECK (person IN ('input', 'authorization')),
    ADD CONSTRAINT nomos_status_classes_person_not_terminal CHECK (person IS NULL OR NOT terminal);
