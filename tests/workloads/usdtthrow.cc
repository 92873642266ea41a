// SPDX-License-Identifier: MIT
/*
 * C++ exceptions counted by the program itself, for a tracer of libstdc++'s
 * USDT probes (libstdcxx:throw in __cxa_throw, libstdcxx:catch in
 * __cxa_begin_catch) to be held to: tests/integration/usdt_spans.sh.
 *
 * Usage: usdtthrow --throws N [--threads T]
 * Each of T threads (default 1) throws N exceptions and catches each one
 * once, by a handler of its own: a third its own std::runtime_error, a third
 * an int, a third std::out_of_range thrown inside libstdc++ by
 * std::vector::at(), so __cxa_throw is reached from the library as well as
 * from this file. Nothing is rethrown (`throw;` is libstdcxx:rethrow, not
 * throw, and would be caught twice). At the end it prints
 * "thrown TOTAL caught TOTAL" (TOTAL = N * T, counted as they happened) and
 * exits 0; 2 on bad arguments.
 */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

static std::atomic<unsigned long> thrown{0}, caught{0};

// Not inlined: the throws really leave a frame.
__attribute__((noinline)) static void thrower(unsigned long i, const std::vector<int> &v)
{
	thrown.fetch_add(1, std::memory_order_relaxed);
	switch (i % 3) {
	case 0:
		throw std::runtime_error("usdtthrow");
	case 1:
		throw static_cast<int>(i);
	default:
		(void)v.at(v.size() + i); // std::out_of_range, thrown by libstdc++
	}
}

static void loop(unsigned long n)
{
	const std::vector<int> v(3, 7);

	for (unsigned long i = 0; i < n; i++) {
		try {
			thrower(i, v);
		} catch (const std::out_of_range &) {
			caught.fetch_add(1, std::memory_order_relaxed);
		} catch (const std::runtime_error &) {
			caught.fetch_add(1, std::memory_order_relaxed);
		} catch (int) {
			caught.fetch_add(1, std::memory_order_relaxed);
		}
	}
}

static int usage()
{
	std::fprintf(stderr, "usdtthrow: usage: usdtthrow --throws 1..100000000 [--threads 1..64]\n");
	return 2;
}

static bool number(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return false;
	v = std::strtoul(s, &end, 10);
	if (*end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	unsigned long n = 0, threads = 1;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--throws") && i + 1 < argc) {
			if (!number(argv[++i], 1, 100000000, &n))
				return usage();
		} else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
			if (!number(argv[++i], 1, 64, &threads))
				return usage();
		} else {
			return usage();
		}
	}
	if (!n)
		return usage();
	std::vector<std::thread> ts;
	for (unsigned long t = 1; t < threads; t++)
		ts.emplace_back(loop, n);
	loop(n);
	for (auto &t : ts)
		t.join();
	std::printf("thrown %lu caught %lu\n", thrown.load(), caught.load());
	return 0;
}
