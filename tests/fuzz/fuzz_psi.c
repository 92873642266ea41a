// SPDX-License-Identifier: MIT
/*
 * PSI files. The input is the text of /proc/pressure/cpu. Properties:
 *   - psi__parse returns 0 or -EINVAL; refused, it says why and leaves its
 *     output as it was
 *   - accepted, the lines written back in the kernel's layout (three
 *     decimals) parse to the same values
 *   - pressure__sample of a tree holding the input records cpu some exactly
 *     when the bytes have no NUL, fit its buffer and parse, with the same
 *     total; the system's cpu full is never recorded
 */
#include <inttypes.h>

#include "fuzz.h"
#include "host/pressure.h"

#define PSI_TEXT_MAX 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_put(fuzz_tmp_root(), "proc/pressure/cpu", "", 0);
	return 0;
}

static size_t write_back(char *buf, size_t len, const struct psi_line l[PSI__KINDS])
{
	size_t n = 0;
	int k;

	for (k = 0; k < PSI__KINDS && l[k].present; k++)
		n += (size_t)snprintf(
			buf + n, len - n,
			"%s avg10=%" PRIu64 ".%03" PRIu64 " avg60=%" PRIu64 ".%03" PRIu64
			" avg300=%" PRIu64 ".%03" PRIu64 " total=%" PRIu64 "\n",
			psi_kind__name(k), l[k].avg10_milli / 1000, l[k].avg10_milli % 1000,
			l[k].avg60_milli / 1000, l[k].avg60_milli % 1000, l[k].avg300_milli / 1000,
			l[k].avg300_milli % 1000, l[k].total_us);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[PSI_TEXT_MAX + 1], again[512], why[160], dir[300];
	struct psi_line l[PSI__KINDS], m[PSI__KINDS];
	struct pressure_sample s;
	bool nul;
	int err;

	if (size > PSI_TEXT_MAX)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	nul = memchr(data, '\0', size) != NULL;

	memset(l, 0x5a, sizeof(l));
	why[0] = '\0';
	err = psi__parse(text, l, why, sizeof(why));
	FUZZ_CHECK(err == 0 || err == -EINVAL);
	if (err) {
		FUZZ_CHECK(why[0]);
		FUZZ_CHECK(l[0].total_us == 0x5a5a5a5a5a5a5a5aULL);
	} else {
		FUZZ_CHECK(l[PSI_SOME].present);
		FUZZ_CHECK(write_back(again, sizeof(again), l) < sizeof(again));
		FUZZ_CHECK(psi__parse(again, m, NULL, 0) == 0);
		FUZZ_CHECK(!memcmp(l, m, sizeof(l)));
	}

	fuzz_put(fuzz_tmp_root(), "proc/pressure/cpu", data, size);
	snprintf(dir, sizeof(dir), "%s/proc/pressure", fuzz_tmp_root());
	pressure__sample(dir, false, true, &s, why, sizeof(why));
	/* The reader's buffer holds 511 bytes; a longer file is refused whole. */
	FUZZ_CHECK(s.total_us[PSI_CPU][PSI_SOME].ev.recorded == (!err && !nul && size < 512));
	if (s.total_us[PSI_CPU][PSI_SOME].ev.recorded)
		FUZZ_CHECK(s.total_us[PSI_CPU][PSI_SOME].ev.value == l[PSI_SOME].total_us);
	FUZZ_CHECK(!s.total_us[PSI_CPU][PSI_FULL].ev.recorded);
	FUZZ_CHECK(s.total_us[PSI_CPU][PSI_SOME].source == EV_SRC_PROC_PRESSURE);
	return 0;
}
