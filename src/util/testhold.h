/* testhold — test-only pause points, for tests that must observe the daemon
 * while something slow is in progress without timing anything.
 *
 * test_hold("model-load") returns at once unless $TROVE_TEST_HOLD names a
 * folder holding a file of that name; then it creates "<name>.waiting"
 * there (so the test knows the point was reached) and waits, at most 120 s,
 * until the file is removed. Production runs never set the variable: the
 * cost is one getenv(). Points: "model-load" (api: an embedding model about
 * to be opened), "update" (api_update about to index). */
#ifndef TROVE_TESTHOLD_H
#define TROVE_TESTHOLD_H

void test_hold(const char *point);

#endif
