// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "document/evjson.h"

static struct json_object *reparse(struct json_object *obj)
{
	const char *text = evjson__to_string(obj);
	struct json_object *back = json_tokener_parse(text);

	assert_non_null(back);
	return back;
}

static void test_evjson__u64_max_round_trips(void **state)
{
	struct json_object *o = json_object_new_object(), *back, *v;
	const char *text;

	(void)state;
	assert_int_equal(evjson__add(o, "max", evjson__u64(UINT64_MAX)), 0);
	assert_int_equal(evjson__add(o, "above53", evjson__u64((1ULL << 53) + 1)), 0);
	text = evjson__to_string(o);
	/* Printed exactly, not as a double. */
	assert_non_null(strstr(text, "18446744073709551615"));
	assert_non_null(strstr(text, "9007199254740993"));
	assert_null(strstr(text, "e+"));
	back = reparse(o);
	assert_true(json_object_object_get_ex(back, "max", &v));
	assert_int_equal(json_object_get_type(v), json_type_int);
	assert_true(json_object_get_uint64(v) == UINT64_MAX);
	assert_true(json_object_object_get_ex(back, "above53", &v));
	assert_true(json_object_get_uint64(v) == (1ULL << 53) + 1);
	json_object_put(back);
	json_object_put(o);
}

static void check_sanitize(const char *in, size_t len, const char *want)
{
	char *got = evjson__utf8_sanitize(in, len);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

#define FFFD "\xef\xbf\xbd"

static void test_evjson__utf8_maximal_subparts(void **state)
{
	(void)state;
	check_sanitize("plain", 5, "plain");
	check_sanitize("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9,
		       "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	check_sanitize("a\xff"
		       "b",
		       3, "a" FFFD "b");
	/* Overlong and invalid leads: one replacement per byte. */
	check_sanitize("\xc0\xaf", 2, FFFD FFFD);
	check_sanitize("\xe0\x80\xaf", 3, FFFD FFFD FFFD);
	/* Surrogates and > U+10FFFF are ill-formed. */
	check_sanitize("\xed\xa0\x80", 3, FFFD FFFD FFFD);
	check_sanitize("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);
	/* A truncated sequence is one maximal subpart. */
	check_sanitize("\xe2\x82", 2, FFFD);
	check_sanitize("\xe2\x82z", 3, FFFD "z");
	check_sanitize("\xf0\x9f\x98", 3, FFFD);
	check_sanitize("\x80\x80", 2, FFFD FFFD);
	/* Length-bounded: stops at len, or at an embedded NUL (comm[16]). */
	check_sanitize("abcdef", 3, "abc");
	check_sanitize("ab\0cd", 5, "ab");
}

/* Every byte value 1..255 in a string yields parseable JSON that round-trips. */
static void test_evjson__any_byte_string_is_valid_json(void **state)
{
	char bytes[256];
	struct json_object *o = json_object_new_object(), *back, *v;
	char *want;
	int i;

	(void)state;
	for (i = 1; i < 256; i++)
		bytes[i - 1] = (char)i;
	bytes[255] = '\0';
	assert_int_equal(evjson__add(o, "comm", evjson__string(bytes)), 0);
	back = reparse(o);
	assert_true(json_object_object_get_ex(back, "comm", &v));
	want = evjson__utf8_sanitize(bytes, 255);
	assert_string_equal(json_object_get_string(v), want);
	/* ASCII, quotes, backslash and control characters survive intact. */
	assert_memory_equal(json_object_get_string(v), bytes, 127);
	free(want);
	json_object_put(back);
	json_object_put(o);
}

static void test_evjson__evidence_shapes(void **state)
{
	struct json_object *o;

	(void)state;
	o = evjson__ev_u64(ev_u64__recorded(42));
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"status\":\"recorded\",\"value\":42}");
	json_object_put(o);
	o = evjson__ev_u64(ev_u64__gap(EV_GAP_PERMISSION_DENIED));
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"status\":\"unavailable\",\"reason\":\"permission-denied\"}");
	json_object_put(o);
	o = evjson__sev_u32(sev_u32__recorded(UINT32_MAX, EV_SRC_SYSTEM_CALL));
	assert_string_equal(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		"{\"value\":{\"status\":\"recorded\",\"value\":4294967295},\"source\":\"system-call\"}");
	json_object_put(o);
	o = evjson__ev_source(
		(struct ev_source_ev){ .recorded = false, .reason = EV_GAP_UNSUPPORTED });
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"status\":\"unavailable\",\"reason\":\"unsupported\"}");
	json_object_put(o);
	/* A sum over some of its calls (docs/evidence.md 7.3.3). */
	o = evjson__partial_u64(UINT64_MAX, 38, 40, EV_GAP_UNAVAILABLE);
	assert_string_equal(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		"{\"status\":\"partial\",\"value\":18446744073709551615,\"covered_calls\":38,"
		"\"calls\":40,\"reason\":\"unavailable\"}");
	json_object_put(o);
}

static void test_evjson__capability_key_order_and_detail(void **state)
{
	struct collector_capability c;
	struct json_object *o;

	(void)state;
	collector_capability__set(&c, COLLECTOR_SCHEDULER_ACTIVITY, AVAIL_AVAILABLE, NULL);
	o = evjson__capability(&c);
	assert_string_equal(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		"{\"version\":1,\"collector\":\"scheduler-activity\",\"availability\":\"available\"}");
	json_object_put(o);
	/* Not available: detail is required, and never empty. */
	collector_capability__set(&c, COLLECTOR_HARDWARE_COUNTERS, AVAIL_UNSUPPORTED, NULL);
	o = evjson__capability(&c);
	assert_string_equal(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		"{\"version\":1,\"collector\":\"hardware-counters\",\"availability\":\"unsupported\",\"detail\":\"no detail recorded\"}");
	json_object_put(o);
}

static void test_evjson__span_record_shape(void **state)
{
	struct span_record s;
	struct json_object *o, *hw, *v;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.span_id = 3;
	s.parent_span_id = ev_u64__recorded(1);
	snprintf(s.metric_id, sizeof(s.metric_id), "parse-request");
	s.hardware_recorded = true;
	s.hardware.cycles_begin = ev_u64__recorded(10);
	s.hardware.cycles_end = ev_u64__recorded(UINT64_MAX);
	s.hardware.instructions_begin = ev_u64__gap(EV_GAP_UNSUPPORTED);
	s.hardware.instructions_end = ev_u64__gap(EV_GAP_UNSUPPORTED);
	o = evjson__span_record(&s);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "hardware", &hw));
	assert_true(json_object_object_get_ex(hw, "status", &v));
	assert_string_equal(json_object_get_string(v), "recorded");
	assert_true(json_object_object_get_ex(o, "work_origin", &v));
	assert_string_equal(json_object_get_string(v), "root");
	assert_true(json_object_object_get_ex(o, "task_id", &v));
	assert_true(json_object_object_get_ex(v, "reason", &v));
	assert_string_equal(json_object_get_string(v), "unavailable");
	assert_non_null(strstr(evjson__to_string(o), "18446744073709551615"));
	json_object_put(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evjson__u64_max_round_trips),
		cmocka_unit_test(test_evjson__utf8_maximal_subparts),
		cmocka_unit_test(test_evjson__any_byte_string_is_valid_json),
		cmocka_unit_test(test_evjson__evidence_shapes),
		cmocka_unit_test(test_evjson__capability_key_order_and_detail),
		cmocka_unit_test(test_evjson__span_record_shape),
	};

	return cmocka_run_group_tests_name("evjson", tests, NULL, NULL);
}
