// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve/promtext.h"

#define NS_PER_SEC UINT64_C(1000000000)

struct prom_family {
	char *name;
	enum prom_type type;
};

struct promtext {
	char *buf;
	size_t len, cap;
	bool om;
	struct prom_family *fams; /* the last one takes the samples */
	size_t nr_fams, cap_fams;
};

/* Sample-name suffixes each type may produce, in either format. */
static const char *const *type_suffixes(enum prom_type t)
{
	static const char *const counter[] = { "", "_total", "_created", NULL };
	static const char *const gauge[] = { "", NULL };
	static const char *const histogram[] = {
		"", "_bucket", "_sum", "_count", "_created", NULL
	};
	static const char *const info[] = { "", "_info", NULL };

	switch (t) {
	case PROM_COUNTER:
		return counter;
	case PROM_GAUGE:
		return gauge;
	case PROM_HISTOGRAM:
		return histogram;
	case PROM_INFO:
		return info;
	}
	return NULL;
}

int promtext__new(struct promtext **out, bool openmetrics)
{
	struct promtext *p;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->om = openmetrics;
	*out = p;
	return 0;
}

void promtext__free(struct promtext *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr_fams; i++)
		free(p->fams[i].name);
	free(p->fams);
	free(p->buf);
	free(p);
}

static int reserve(struct promtext *p, size_t more)
{
	size_t cap = p->cap ? p->cap : 4096;
	char *nb;

	/* The common case, once per piece of every line: room already. */
	if (more < p->cap - p->len)
		return 0;
	if (more > SIZE_MAX - p->len - 1)
		return -ENOMEM;
	/* One spare byte for finish's NUL. */
	while (cap < p->len + more + 1) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == p->cap)
		return 0;
	nb = realloc(p->buf, cap);
	if (!nb)
		return -ENOMEM;
	p->buf = nb;
	p->cap = cap;
	return 0;
}

static int put_mem(struct promtext *p, const char *s, size_t n)
{
	int err = reserve(p, n);

	if (err)
		return err;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	return 0;
}

static int put(struct promtext *p, const char *s)
{
	return put_mem(p, s, strlen(s));
}

/*
 * Length of the valid UTF-8 sequence at s (n bytes left), or 0 with *bad
 * set to the length of its maximal invalid prefix, which becomes one
 * U+FFFD (Unicode's "maximal subpart" practice). Overlong forms,
 * surrogates and code points above U+10FFFF are invalid.
 */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 1;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else {
		*bad = 1;
		return 0;
	}
	for (i = 1; i <= need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return need + 1;
}

/*
 * Backslash and newline are escaped in both formats, and double quotes in
 * label values and in OpenMetrics HELP; Prometheus text HELP keeps them
 * (its parser knows only \\ and \n there).
 */
static int put_escaped(struct promtext *p, const char *str, bool quote)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), i = 0, run, seq, bad;
	int err = 0;

	while (i < n && !err) {
		for (run = i; run < n; run += seq) {
			if (s[run] == '\\' || s[run] == '\n' || (quote && s[run] == '"'))
				break;
			seq = utf8_seq(s + run, n - run, &bad);
			if (!seq)
				break;
		}
		err = put_mem(p, str + i, run - i);
		i = run;
		if (err || i == n)
			break;
		if (s[i] == '\\') {
			err = put(p, "\\\\");
			i++;
		} else if (s[i] == '\n') {
			err = put(p, "\\n");
			i++;
		} else if (s[i] == '"') {
			err = put(p, "\\\"");
			i++;
		} else {
			utf8_seq(s + i, n - i, &bad);
			err = put(p, "\xef\xbf\xbd");
			i += bad;
		}
	}
	return err;
}

static bool valid_name(const char *s, bool colon)
{
	const char *c;

	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return false;
	for (c = s; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || (colon && *c == ':')))
			return false;
	}
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* a1 a2 == b1 b2, as concatenations */
static bool cat_eq(const char *a1, const char *a2, const char *b1, const char *b2)
{
	size_t la = strlen(a1), lb = strlen(b1), n = la + strlen(a2), i;

	if (n != lb + strlen(b2))
		return false;
	for (i = 0; i < n; i++) {
		char ca = i < la ? a1[i] : a2[i - la];
		char cb = i < lb ? b1[i] : b2[i - lb];

		if (ca != cb)
			return false;
	}
	return true;
}

static bool clashes(const struct promtext *p, const char *name, enum prom_type type)
{
	const char *const *sa, *const *sb;
	size_t i;

	for (i = 0; i < p->nr_fams; i++) {
		for (sa = type_suffixes(type); *sa; sa++)
			for (sb = type_suffixes(p->fams[i].type); *sb; sb++)
				if (cat_eq(name, *sa, p->fams[i].name, *sb))
					return true;
	}
	return false;
}

static const char *sample_suffix(enum prom_type type)
{
	if (type == PROM_COUNTER)
		return "_total";
	if (type == PROM_INFO)
		return "_info";
	return "";
}

static int put_family(struct promtext *p, const char *name, enum prom_type type, const char *unit,
		      const char *help)
{
	static const char *const om_type[] = { "counter", "gauge", "histogram", "info" };
	static const char *const text_type[] = { "counter", "gauge", "histogram", "gauge" };
	const char *tname_suffix = p->om ? "" : sample_suffix(type);
	int err = 0;

	if (p->om) {
		err = err ?: put(p, "# TYPE ");
		err = err ?: put(p, name);
		err = err ?: put(p, " ");
		err = err ?: put(p, om_type[type]);
		err = err ?: put(p, "\n");
		if (unit) {
			err = err ?: put(p, "# UNIT ");
			err = err ?: put(p, name);
			err = err ?: put(p, " ");
			err = err ?: put(p, unit);
			err = err ?: put(p, "\n");
		}
	}
	if (help) {
		err = err ?: put(p, "# HELP ");
		err = err ?: put(p, name);
		err = err ?: put(p, tname_suffix);
		err = err ?: put(p, " ");
		err = err ?: put_escaped(p, help, p->om);
		err = err ?: put(p, "\n");
	}
	if (!p->om) {
		err = err ?: put(p, "# TYPE ");
		err = err ?: put(p, name);
		err = err ?: put(p, tname_suffix);
		err = err ?: put(p, " ");
		err = err ?: put(p, text_type[type]);
		err = err ?: put(p, "\n");
	}
	return err;
}

int promtext__family(struct promtext *p, const char *name, enum prom_type type, const char *unit,
		     const char *help)
{
	size_t mark = p->len;
	struct prom_family *f;
	char *copy = NULL;
	int err;

	if (unit && !*unit)
		unit = NULL;
	if (help && !*help)
		help = NULL;
	if (!valid_name(name, true) || !strncmp(name, "__", 2) || !type_suffixes(type))
		return -EINVAL;
	if ((type == PROM_COUNTER && ends_with(name, "_total")) ||
	    (type == PROM_INFO && ends_with(name, "_info")))
		return -EINVAL;
	/* OpenMetrics: the unit is the name's suffix; info has none. */
	if (unit && (type == PROM_INFO || !valid_name(unit, true) || strlen(unit) >= strlen(name) ||
		     !ends_with(name, unit) || name[strlen(name) - strlen(unit) - 1] != '_'))
		return -EINVAL;
	if (clashes(p, name, type))
		return -EEXIST;

	if (p->nr_fams == p->cap_fams) {
		size_t cap = p->cap_fams ? p->cap_fams * 2 : 16;

		f = reallocarray(p->fams, cap, sizeof(*f));
		if (!f)
			return -ENOMEM;
		p->fams = f;
		p->cap_fams = cap;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	err = put_family(p, name, type, unit, help);
	if (err) {
		p->len = mark;
		free(copy);
		return err;
	}
	p->fams[p->nr_fams].name = copy;
	p->fams[p->nr_fams].type = type;
	p->nr_fams++;
	return 0;
}

static const struct prom_family *current(const struct promtext *p)
{
	return p->nr_fams ? &p->fams[p->nr_fams - 1] : NULL;
}

static int check_labels(const struct prom_label *l, size_t nr, bool histogram)
{
	size_t i, j;

	if (nr && !l)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		if (!valid_name(l[i].name, false) || !strncmp(l[i].name, "__", 2) || !l[i].value)
			return -EINVAL;
		if (histogram && !strcmp(l[i].name, "le"))
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (!strcmp(l[i].name, l[j].name))
				return -EINVAL;
	}
	return 0;
}

/* name suffix{labels[,le="le"]} value\n */
static int put_sample(struct promtext *p, const char *suffix, const struct prom_label *l, size_t nr,
		      const char *le, const char *value)
{
	const struct prom_family *f = current(p);
	int err = 0;
	size_t i;

	err = err ?: put(p, f->name);
	err = err ?: put(p, suffix);
	if (nr || le) {
		err = err ?: put(p, "{");
		for (i = 0; i < nr; i++) {
			err = err ?: put(p, i ? "," : "");
			err = err ?: put(p, l[i].name);
			err = err ?: put(p, "=\"");
			err = err ?: put_escaped(p, l[i].value, true);
			err = err ?: put(p, "\"");
		}
		if (le) {
			err = err ?: put(p, nr ? ",le=\"" : "le=\"");
			err = err ?: put(p, le);
			err = err ?: put(p, "\"");
		}
		err = err ?: put(p, "}");
	}
	err = err ?: put(p, " ");
	err = err ?: put(p, value);
	err = err ?: put(p, "\n");
	return err;
}

static int scalar(struct promtext *p, const struct prom_label *l, size_t nr, const char *value,
		  bool is_one)
{
	const struct prom_family *f = current(p);
	size_t mark = p->len;
	int err;

	if (!f || f->type == PROM_HISTOGRAM || (f->type == PROM_INFO && !is_one))
		return -EINVAL;
	err = check_labels(l, nr, false);
	if (err)
		return err;
	err = put_sample(p, sample_suffix(f->type), l, nr, NULL, value);
	if (err)
		p->len = mark;
	return err;
}

/*
 * v in decimal into buf (at least 21 bytes); returns the length. A scrape
 * writes tens of thousands of numbers: snprintf was the largest cost.
 */
static size_t fmt_u64(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

int promtext__u64(struct promtext *p, const struct prom_label *l, size_t nr, uint64_t v)
{
	char num[24];

	fmt_u64(num, v);
	return scalar(p, l, nr, num, v == 1);
}

size_t promtext__fmt_seconds(char *buf, uint64_t ns)
{
	uint64_t frac = ns % NS_PER_SEC;
	size_t n = fmt_u64(buf, ns / NS_PER_SEC);
	int width = 9;

	if (frac) {
		while (frac % 10 == 0) {
			frac /= 10;
			width--;
		}
		buf[n++] = '.';
		/* frac has `width` digits once its leading zeros are added. */
		for (int d = width - 1; d >= 0; d--) {
			buf[n + (size_t)d] = (char)('0' + frac % 10);
			frac /= 10;
		}
		n += (size_t)width;
		buf[n] = '\0';
	}
	return n;
}

int promtext__ns_as_seconds(struct promtext *p, const struct prom_label *l, size_t nr, uint64_t ns)
{
	const struct prom_family *f = current(p);
	char num[PROMTEXT_SECONDS_MAX];

	/* An info value is 1, never a duration. */
	if (f && f->type == PROM_INFO)
		return -EINVAL;
	promtext__fmt_seconds(num, ns);
	return scalar(p, l, nr, num, false);
}

/*
 * le is the bucket's inclusive upper bound, 2^(k+1) - 1 ns, in seconds.
 * Values are whole nanoseconds, so "value <= le" (the meaning of le) holds
 * for exactly the values counted so far; the exclusive bound 2^(k+1) would
 * claim values equal to it that the next bucket holds. The decimal is
 * exact and the same on every scrape. OpenMetrics asks for Go's %g
 * rendering in le but lets C exposers render otherwise, and float
 * rendering would round these bounds.
 */
int promtext__histogram_log2_ns(struct promtext *p, const struct prom_label *l, size_t nr,
				const uint64_t *buckets, size_t nr_buckets, uint64_t sum_ns)
{
	const struct prom_family *f = current(p);
	char le[PROMTEXT_SECONDS_MAX], num[24];
	size_t mark = p->len, k;
	uint64_t total = 0;
	int err;

	if (!f || f->type != PROM_HISTOGRAM || !buckets || !nr_buckets ||
	    nr_buckets > PROMTEXT_LOG2_MAX)
		return -EINVAL;
	err = check_labels(l, nr, true);
	if (err)
		return err;
	for (k = 0; k < nr_buckets; k++) {
		if (buckets[k] > UINT64_MAX - total)
			return -EOVERFLOW;
		total += buckets[k];
	}

	total = 0;
	for (k = 0; k + 1 < nr_buckets && !err; k++) {
		total += buckets[k];
		promtext__fmt_seconds(le, (UINT64_C(2) << k) - 1);
		fmt_u64(num, total);
		err = put_sample(p, "_bucket", l, nr, le, num);
	}
	total += buckets[nr_buckets - 1];
	fmt_u64(num, total);
	err = err ?: put_sample(p, "_bucket", l, nr, "+Inf", num);
	promtext__fmt_seconds(le, sum_ns);
	err = err ?: put_sample(p, "_sum", l, nr, NULL, le);
	err = err ?: put_sample(p, "_count", l, nr, NULL, num);
	if (err)
		p->len = mark;
	return err;
}

char *promtext__finish(struct promtext *p, size_t *len)
{
	char *text = NULL;
	int err = 0;

	if (p->om)
		err = put(p, "# EOF\n");
	/* reserve() always keeps a spare byte for the NUL; an empty text has no buffer yet. */
	err = err ?: reserve(p, 0);
	if (!err) {
		p->buf[p->len] = '\0';
		text = p->buf;
		if (len)
			*len = p->len;
		p->buf = NULL;
	}
	promtext__free(p);
	if (!text)
		errno = -err;
	return text;
}

const char *promtext__content_type(bool openmetrics)
{
	return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
			     "text/plain; version=0.0.4; charset=utf-8";
}

/* RFC 9110 qvalue in thousandths: "0", "0.5", "1.000"; -1 when malformed. */
static int parse_q(const char *s, size_t n)
{
	int q, scale = 100;
	size_t i;

	if (!n || (s[0] != '0' && s[0] != '1'))
		return -1;
	q = (s[0] - '0') * 1000;
	if (n == 1)
		return q;
	if (s[1] != '.' || n > 5)
		return -1;
	for (i = 2; i < n; i++, scale /= 10) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		q += (s[i] - '0') * scale;
	}
	return q > 1000 ? -1 : q;
}

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

static bool token_is(const char *s, size_t n, const char *want)
{
	return strlen(want) == n && !strncasecmp(s, want, n);
}

/*
 * One media range "type/sub;param=value;q=0.5": *q (thousandths) for an
 * OpenMetrics or text/plain range we can serve, -1 otherwise; returns 1
 * for OpenMetrics, 0 for text/plain, -1 for anything else.
 */
static int media_range(const char *s, size_t n, int *q)
{
	const char *type = s, *semi = memchr(s, ';', n);
	size_t tn = semi ? (size_t)(semi - s) : n;
	const char *version = NULL;
	size_t vn = 0;
	int kind;

	*q = 1000;
	trim(&type, &tn);
	if (token_is(type, tn, "application/openmetrics-text"))
		kind = 1;
	else if (token_is(type, tn, "text/plain"))
		kind = 0;
	else
		return -1;
	while (semi) {
		const char *param = semi + 1, *eq, *val;
		size_t pn, kn, valn;

		n -= (size_t)(param - s);
		s = param;
		semi = memchr(s, ';', n);
		pn = semi ? (size_t)(semi - s) : n;
		eq = memchr(param, '=', pn);
		if (!eq)
			return -1;
		kn = (size_t)(eq - param);
		val = eq + 1;
		valn = pn - kn - 1;
		trim(&param, &kn);
		trim(&val, &valn);
		if (valn >= 2 && val[0] == '"' && val[valn - 1] == '"') {
			val++;
			valn -= 2;
		}
		if (token_is(param, kn, "q")) {
			*q = parse_q(val, valn);
			if (*q < 0)
				return -1;
		} else if (token_is(param, kn, "version")) {
			version = val;
			vn = valn;
		}
	}
	if (version && !(kind ? token_is(version, vn, "1.0.0") || token_is(version, vn, "0.0.1") :
				token_is(version, vn, "0.0.4")))
		return -1;
	return kind;
}

bool promtext__wants_openmetrics(const char *accept)
{
	int q_om = 0, q_text = 0, q;
	const char *s = accept;

	while (s && *s) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);

		switch (media_range(s, n, &q)) {
		case 1:
			q_om = q > q_om ? q : q_om;
			break;
		case 0:
			q_text = q > q_text ? q : q_text;
			break;
		}
		s = comma ? comma + 1 : NULL;
	}
	return q_om > 0 && q_om >= q_text;
}
