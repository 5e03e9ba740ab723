"""What the tests share, one module a concern (tests import these, never another test module):
support (timed and raw requests), claims (the checks that time a target's claims), strict
(the strict contract's tables and schemathesis), targets (every target x profile, started on
a free port), labrun (the lab CLI as a watched subprocess and the run folder it writes)."""
