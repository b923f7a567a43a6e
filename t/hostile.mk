# t/hostile.mk: hostile input and faults (issue 13): the tests that feed
# decod what an attacker or a crash would, the fuzz regression replays.
TESTS += t/integration/hostile_depth.sh
EXTRA_DIST += t/integration/hostile_depth.sh t/hostile.mk
