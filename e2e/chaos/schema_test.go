package chaos

// chaosSchema is the harness's own bookkeeping, created beside cronfence's
// schema in the throwaway cluster after `cronfence migrate`.
//
//   - ledger: one row per committed effect: every committed insert of a job
//     is one (the jobs insert without an idempotency guard unless
//     CHAOS_WRITE=fence-once). No unique key on (job, slot), on purpose: a
//     duplicate effect stays visible to the checker. committed_at
//     is set by a deferred trigger, so it is read at COMMIT, after every
//     statement of the job's transaction (a fenced transaction still holds
//     its lease row then).
//   - lease_history: every insert or update of cronfence.leases, written by
//     a trigger in the same transaction, so the checker can tell which
//     generation held a lease at any instant.
//   - weak_locks: the lock rows of the release-at-end guard that weakcron
//     measures beside cronfence.
const chaosSchema = `
CREATE SCHEMA chaos;

CREATE TABLE chaos.ledger (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          text        NOT NULL,
    lease        text        NOT NULL, -- $CRONFENCE_LEASE: the lease the effect was written under
    slot         timestamptz NOT NULL,
    generation   bigint      NOT NULL,
    attempt      integer     NOT NULL,
    replica      text        NOT NULL,
    inserted_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    committed_at timestamptz
);

CREATE FUNCTION chaos.stamp_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chaos.ledger SET committed_at = clock_timestamp() WHERE id = NEW.id;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER ledger_commit AFTER INSERT ON chaos.ledger
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chaos.stamp_commit();

CREATE TABLE chaos.lease_history (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL,
    owner       text        NOT NULL,
    generation  bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION chaos.record_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chaos.lease_history (name, owner, generation, expires_at)
    VALUES (NEW.name, NEW.owner, NEW.generation, NEW.expires_at);
    RETURN NULL;
END;
$$;

CREATE TRIGGER lease_history AFTER INSERT OR UPDATE ON cronfence.leases
    FOR EACH ROW EXECUTE FUNCTION chaos.record_lease();

-- The lock rows of weakcron's release-at-end guard (the weaker designs).
CREATE TABLE chaos.weak_locks (
    name  text        PRIMARY KEY,
    owner text        NOT NULL,
    until timestamptz NOT NULL
);
`
