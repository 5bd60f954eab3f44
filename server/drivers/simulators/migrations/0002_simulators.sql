-- State of the simulated backends. In production these backends are external systems; the
-- simulators keep what they "hold" here so that a restart does not forget it.
CREATE TABLE sim_fault_counters (
  rule text NOT NULL,
  subject text NOT NULL,
  calls integer NOT NULL,
  PRIMARY KEY (rule, subject)
);
