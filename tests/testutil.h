/* SPDX-License-Identifier: MIT */
/* Shared by the cmocka tests; include after <cmocka.h>. */
#ifndef KHBPF_TESTUTIL_H
#define KHBPF_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A test that cannot run here: in CI (CI=true) that is a failure, since CI
 * runs as root on a BPF-capable kernel; elsewhere skip, saying why.
 */
#define require_or_skip(cond, reason)                                                   \
	do {                                                                            \
		if (!(cond)) {                                                          \
			const char *ci_ = getenv("CI");                                 \
			if (ci_ && !strcmp(ci_, "true"))                                \
				fail_msg("required in CI but unavailable: %s", reason); \
			fprintf(stderr, "SKIP %s: %s\n", __func__, reason);             \
			skip();                                                         \
		}                                                                       \
	} while (0)

#endif /* KHBPF_TESTUTIL_H */
