// SPDX-License-Identifier: MIT
/*
 * keyhogstages [--rounds N]: functions annotated (KHBPF_SPAN) with names
 * from keyhog-profile's MetricId list and with names outside it, nested
 * both ways, for the keyhog rendering's test (tests/integration/keyhog.sh).
 * Each of N rounds (default 5) calls
 *	source-read                          twice (a crate name)
 *	local-parse -> decode                once (decode, a crate name, inside
 *	                                     a span of another name)
 *	reporting -> local-format            once (the other way round)
 * and prints the calls it made as one JSON line at the end:
 *	{"source-read": 10, "decode": 5, "reporting": 5, "local-parse": 5,
 *	 "local-format": 5}
 */
#include <stdio.h>
#include <string.h>

#include "../../include/khbpf/span.h"
#include "workload.h"

struct calls {
	unsigned long source_read, decode, reporting, local_parse, local_format;
};

int stage_source_read(struct calls *c);
int stage_decode(struct calls *c);
int stage_local_parse(struct calls *c);
int stage_local_format(struct calls *c);
int stage_reporting(struct calls *c);

KHBPF_SPAN(stage_source_read, "source-read")
int stage_source_read(struct calls *c)
{
	burn(20000);
	return (int)++c->source_read;
}

KHBPF_SPAN(stage_decode, "decode")
int stage_decode(struct calls *c)
{
	burn(20000);
	return (int)++c->decode;
}

KHBPF_SPAN(stage_local_parse, "local-parse")
int stage_local_parse(struct calls *c)
{
	int r = stage_decode(c);

	KEEP(r);
	c->local_parse++;
	return r + 1;
}

KHBPF_SPAN(stage_local_format, "local-format")
int stage_local_format(struct calls *c)
{
	burn(10000);
	return (int)++c->local_format;
}

KHBPF_SPAN(stage_reporting, "reporting")
int stage_reporting(struct calls *c)
{
	int r = stage_local_format(c);

	KEEP(r);
	c->reporting++;
	return r + 1;
}

int main(int argc, char **argv)
{
	unsigned long rounds = 5, i;
	struct calls c = { 0 };

	if ((argc != 1 && argc != 3) || (argc == 3 && (strcmp(argv[1], "--rounds") ||
						       parse_ulong(argv[2], 1, 100000, &rounds)))) {
		fprintf(stderr, "usage: keyhogstages [--rounds N]\n");
		return 2;
	}
	for (i = 0; i < rounds; i++) {
		stage_source_read(&c);
		stage_source_read(&c);
		stage_local_parse(&c);
		stage_reporting(&c);
	}
	printf("{\"source-read\": %lu, \"decode\": %lu, \"reporting\": %lu, \"local-parse\": %lu, "
	       "\"local-format\": %lu}\n",
	       c.source_read, c.decode, c.reporting, c.local_parse, c.local_format);
	return 0;
}
