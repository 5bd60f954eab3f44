-- Background passes over the whole platform (the reconcilers: every instance, every
-- organization's storage), which every process runs on its interval. One pass an interval is
-- what the platform needs, whatever the number of processes: the first process to claim the
-- interval's pass runs it, and the others skip theirs (core/background-passes.ts). Without the
-- claim, two processes rewrote every instance's observations twice as often as one.
CREATE TABLE background_passes (
  task text PRIMARY KEY,
  started_at timestamptz NOT NULL
);
